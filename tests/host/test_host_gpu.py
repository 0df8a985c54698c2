"""GPU machine only: the slow-DataLoader torch loop seen by the host collector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.gpu
def test_slow_loader_flamegraph_shows_workers_and_main_thread_waits(tmp_path):
    script = ROOT / "benchmarks" / "host_gpu_check.py"
    # the checkout first, then whatever the caller's path holds (carried wheels)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path), "--seconds", "20"],
        capture_output=True, text=True, timeout=300, cwd=ROOT / "benchmarks",
        env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    report = tmp_path / "host_gpu_check.json"
    assert report.is_file(), out.stdout + out.stderr
    result = json.loads(report.read_text())
    assert out.returncode == 0, out.stdout + out.stderr
    assert all(result["passed"].values()), result["checks_seconds"]
