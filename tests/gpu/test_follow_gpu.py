"""On a real GPU (pytest -m gpu): ``gtop record --pid`` of a parent that never uses CUDA
follows its forked child that does: the child's kernels are in the recording."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gtop.recordings.reader import Recording

pytestmark = pytest.mark.gpu

PARENT = """
import os, sys, time
child = os.fork()
if child == 0:
    import torch
    x = torch.randn(1024, 1024, device="cuda")
    print("child", os.getpid(), flush=True)
    end = time.monotonic() + 12
    while time.monotonic() < end:
        x = (x @ x).tanh()
        torch.cuda.synchronize()
    os._exit(0)
os.waitpid(child, 0)
"""


def test_forked_cuda_child_is_traced(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline().split()
        assert line[0] == "child", line
        child = int(line[1])
        out = tmp_path / "follow.gtop"
        done = subprocess.run(
            [sys.executable, "-m", "gtop", "record", "--pid", str(parent.pid),
             "--duration", "8", "-o", str(out)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    finally:
        parent.wait(60)
    with Recording(out) as rec:
        kernels = rec.read("kernel") if "kernel" in rec.streams else None
        agents = {int(e.key) for e in rec.entities("agent")}
    assert child in agents
    assert kernels is not None and (kernels["pid"] == child).any()
