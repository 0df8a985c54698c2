"""The live probe control path on a real GPU (run: pytest -m gpu tests/probes):
the agent's ProbeControl around the real TritonProbes, its PROBE frames decoded by
gtop's link into the probe streams, and the %globaltimer clock fit."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks"


def test_globaltimer_fit_brackets_a_kernel() -> None:
    import torch

    from gtop.cupti.clock import fit as clock_fit
    from gtop.probes.engine import globaltimer as clock

    torch.zeros(1, device="cuda")
    samples = clock.samples(32)
    gaps = sorted(a - b for b, _g, a in samples)
    assert gaps[0] < 1_000_000, f"tightest bracket {gaps[0]} ns"
    fit = clock_fit(clock.samples(32))
    before = time.monotonic_ns()
    (_b, gt, _a) = clock.samples(1)[0]
    after = time.monotonic_ns()
    mapped = fit.map_one(gt)
    assert before - 200_000 <= mapped <= after + 200_000, (before, mapped, after, fit)


def test_control_to_streams_on_a_live_triton_kernel(tmp_path: Path) -> None:
    import torch
    import triton

    sys.path.insert(0, str(BENCH))
    import triton_kernels as tk

    from gtop.agent import wire
    from gtop.agent.probe_control import ProbeControl
    from gtop.collectors.agent.link import AgentLink, _Conn
    from gtop.core.hub import Hub
    from gtop.cupti.decode import NameTable
    from gtop.probes import record_streams as streams

    triton.knobs.cache.dir = str(tmp_path / "cache")
    n = 1 << 22
    x = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32)
    y = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32)
    out = torch.empty_like(x)

    def run() -> torch.Tensor:
        tk.add_int_kernel[(n // 1024,)](x, y, out, n, BLOCK=1024, num_warps=4)
        return out.clone()

    want = run()
    ctl = ProbeControl()
    msg = {"op": "probe", "kernel": "^add_int_kernel$", "probe": "block_sched", "on": True}
    assert ctl.control(msg)["ok"]
    t0 = time.monotonic_ns()
    assert torch.equal(run(), want)
    torch.cuda.synchronize()
    t1 = time.monotonic_ns()
    frames: list[bytes] = []
    deadline = time.monotonic() + 10
    while not frames and time.monotonic() < deadline:
        frames = ctl.poll()
        time.sleep(0.01)
    assert len(frames) == 1, ctl._probes.diagnose()
    assert ctl.control({**msg, "on": False})["ok"]
    assert torch.equal(run(), want)

    hub = Hub()
    sub = hub.subscribe()
    link = AgentLink(hub)
    a, b = socket.socketpair()
    try:
        conn = _Conn(a, 1, NameTable(), hub)
        ((kind, payload),) = wire.FrameReader().feed(frames[0])
        link._handle(conn, kind, payload)
    finally:
        a.close()
        b.close()
        link.stop(detach=False)
    update = sub.poll()
    rows = update.batches["probe_block_sched"]
    assert len(rows) == (n // 1024) * 4
    fit = next(e.value for e in update.entities if e.kind == "clock_fit")
    assert fit["method"].startswith("globaltimer kernel"), fit
    # mapped onto CLOCK_MONOTONIC: within the run (plus the fit's bracket error)
    assert t0 - 1_000_000 <= rows["t_ns"].min() and rows["end_ns"].max() <= t1 + 1_000_000
    ctl.close()
    assert streams.stream_name("block_sched") == "probe_block_sched"
