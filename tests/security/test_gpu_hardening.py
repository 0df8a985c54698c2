"""The hardened attach path on a real GPU (``pytest -m gpu tests/security``): root gtop
into another user's CUDA process, a CUDA process that forks workers while traced, and a
short CUDA process's exit under the agent."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_attach_as_root import check_unplantable

from gtop.collectors.agent.attach import attach, launch_with_agent
from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

pytestmark = pytest.mark.gpu

TORCH_LOOP = textwrap.dedent(
    """
    import time, torch
    a = torch.randn(512, 512, device="cuda")
    torch.cuda.synchronize()
    print("ready", flush=True)
    t0, n = time.monotonic(), 0
    while time.monotonic() - t0 < 60:
        torch.relu(a @ a).add_(1.0)
        n += 1
        if n % 2000 == 0:
            torch.cuda.synchronize()
            print("tick", n, flush=True)
    """
)

FORKING_LOADER = textwrap.dedent(
    """
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    data = TensorDataset(torch.randn(4096, 256))
    w = torch.randn(256, 256, device="cuda")
    torch.relu(w @ w).sum().item()  # CUDA first, so the agent is tracing before the fork
    print("ready", flush=True)
    for epoch in range(2):
        loader = DataLoader(data, batch_size=256, num_workers=2,
                            multiprocessing_context="fork")
        for (x,) in loader:
            torch.relu(x.cuda() @ w).sum().item()
    print("done", flush=True)
    """
)


def kernel_rows(sub, timeout: float, at_least: int = 1) -> int:
    """Kernel rows received on ``sub`` within ``timeout`` (stops at ``at_least``)."""
    deadline, rows = time.monotonic() + timeout, 0
    while time.monotonic() < deadline and rows < at_least:
        rows += len(sub.poll().batches.get("kernel", ()))
        time.sleep(0.05)
    return rows


def runs_torch(attacker) -> bool:
    check = [attacker.python, "-c", "import torch; assert torch.cuda.is_available()"]
    return attacker.popen(check, stderr=subprocess.DEVNULL).wait(120) == 0


def test_root_attaches_to_another_users_cuda_process(attacker, processes, tmp_path):
    if not runs_torch(attacker):
        pytest.skip("the unprivileged user cannot import torch with CUDA here")
    hub = Hub()
    sub = hub.subscribe()
    link = AgentLink(hub).start()
    try:
        proc = attacker.popen(
            [attacker.python, "-c", TORCH_LOOP], stdout=subprocess.PIPE, text=True
        )
        processes.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        attach(proc.pid, link)
        status = link.wait(proc.pid, ("tracing",), 30)
        assert status is not None, link.status()
        assert kernel_rows(sub, 10, 100) >= 100
        check_unplantable(link, attacker, tmp_path)
        assert proc.stdout.readline().startswith("tick")  # the target runs on
    finally:
        link.stop()
    assert link.status()[proc.pid].state == "detached"
    assert proc.stdout.readline().startswith("tick")
    assert proc.poll() is None


def test_a_traced_process_forking_loader_workers(processes):
    hub = Hub()
    sub = hub.subscribe()
    link = AgentLink(hub).start()
    try:
        proc = launch_with_agent(
            [sys.executable, "-c", FORKING_LOADER], link, stdout=subprocess.PIPE, text=True
        )
        processes.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        assert link.wait(proc.pid, ("tracing",), 30) is not None
        before = kernel_rows(sub, 2)
        assert proc.stdout.readline().strip() == "done"
        assert proc.wait(60) == 0
        assert link.wait(proc.pid, ("exited",), 10) is not None
        after = kernel_rows(sub, 3, 32)
        assert before + after >= 32  # tracing went on across the forks
        # the forked workers never became agents (nor kept the parent's socket)
        assert set(link.status()) == {proc.pid}
    finally:
        link.stop()


SHORT_CUDA = textwrap.dedent(
    """
    import time, torch
    x = torch.ones(8, device="cuda")
    time.sleep(1.0)  # the agent sees CUDA (it looks every 0.25 s) and starts tracing
    for _ in range(100):
        x.add_(1)
    torch.cuda.synchronize()
    """  # and exits at once: the agent must deliver those kernels on the way out
)


def test_exit_of_a_short_cuda_process_delivers_its_kernels():
    hub = Hub()
    sub = hub.subscribe()
    link = AgentLink(hub).start()
    code = SHORT_CUDA
    try:
        t0 = time.monotonic()
        proc = launch_with_agent([sys.executable, "-c", code], link)
        assert proc.wait(120) == 0
        took = time.monotonic() - t0
        st = link.wait(proc.pid, ("exited",), 10)
        assert st is not None and st.records >= 100, st
        assert kernel_rows(sub, 3, 100) >= 100
    finally:
        link.stop()
    print(f"short CUDA process under the agent: {took:.2f} s")
    assert not Path(link.dir).exists()
