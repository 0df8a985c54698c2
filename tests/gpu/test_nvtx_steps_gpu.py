"""On a real GPU (pytest -m gpu): a training loop that marks its steps with NVTX
(``benchmarks/workloads/nvtx_steps.py``), recorded in the default mode as a user would,
reports its steps from the ``train_step`` range, at the loop's own step time within 10%,
and the what-if replays measure those steps (issue 25 item 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from gtop.recordings.timeline import read_timeline

pytestmark = pytest.mark.gpu
WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads" / "nvtx_steps.py"


def test_steps_come_from_the_nvtx_range_at_the_loops_own_pace(tmp_path: Path) -> None:
    out = tmp_path / "nvtx-steps.gtop"
    done = subprocess.run(
        [sys.executable, "-m", "gtop", "record", "-o", str(out), "--",
         sys.executable, str(WORKLOAD), "--steps", "400"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    truth = json.loads(done.stdout.strip().splitlines()[-1])
    with Recording(out) as rec:
        assert len(rec.read("marker")) >= 3 * 400  # train_step, forward, backward
        report = read_report(rec)
        tl = read_timeline(rec)
    steps = report["what_if"]["steps"]
    assert steps["source"] == "nvtx" and steps["range"] == "train_step", steps
    assert steps["step_s"] == pytest.approx(1 / truth["steps_per_s"], rel=0.1)
    assert tl is not None and tl.step_range == "train_step" and tl.steps is not None
