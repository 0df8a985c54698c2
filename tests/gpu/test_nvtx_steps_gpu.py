"""On a real GPU (pytest -m gpu): a training loop that marks its steps with NVTX
(``benchmarks/workloads/nvtx_steps.py``), recorded in the default mode as a user would,
reports its steps from the ``train_step`` range, at the loop's own step time within 10%,
and the what-if replays measure those steps (issue 25 item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from gtop.recordings.timeline import read_timeline
from tests.gpu.recorded import record

pytestmark = pytest.mark.gpu


def test_steps_come_from_the_nvtx_range_at_the_loops_own_pace(tmp_path: Path) -> None:
    out, truth = record(tmp_path, "nvtx_steps.py", "--steps", "400", timeout=300)
    with Recording(out) as rec:
        assert len(rec.read("marker")) >= 3 * 400  # train_step, forward, backward
        report = read_report(rec)
        tl = read_timeline(rec)
    steps = report["what_if"]["steps"]
    assert steps["source"] == "nvtx" and steps["range"] == "train_step", steps
    assert steps["step_s"] == pytest.approx(1 / truth["steps_per_s"], rel=0.1)
    assert tl is not None and tl.step_range == "train_step" and tl.steps is not None
