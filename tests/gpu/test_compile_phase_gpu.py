"""On a real GPU (pytest -m gpu): a ``torch.compile`` job recorded as a user would
(``gtop record -o F -- python3 benchmarks/workloads/compile_mlp.py``) reports its
compilation as a one-time phase, out of the window, and diagnoses the steady steps after
it: the window is the workload's own timed steps, the verdict the GPU-bound steady state
the workload is built to have, and the step rate it finds the one the workload measured
(issue 25, items 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtop.analysis.window.active_window import STEADY_BINS
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from tests.gpu.recorded import record

pytestmark = pytest.mark.gpu


def test_compile_job_reports_its_compile_and_its_steady_steps(tmp_path: Path) -> None:
    out, job = record(tmp_path, "compile_mlp.py", "--steps", "300", timeout=400)
    with Recording(out) as rec:
        r0 = rec.time_range()[0]
        kernels = rec.read("kernel")
        active = int(kernels["t_ns"].min()), int(kernels["end_ns"].max())
        report = read_report(rec)
    phases = [p for p in report["phases"] if p.get("one_time")]
    assert any(p["name"] == "compilation" for p in phases), report["phases"]
    assert sum(p["seconds"] for p in phases) > 1.0
    window = report["window"]
    before = [p for p in phases if p["from_s"] < window["to_s"]]  # (not a worker's late wake)
    assert window["from_s"] >= max(p["to_s"] for p in before) - 0.01, (window, phases)
    steady = [(t - r0) / 1e9 for t in job["window_ns"]]  # the workload's timed steps
    # the steady state's edges are found to a bin, 1/STEADY_BINS of the GPU's active
    # span (~0.5 s here: 20 s of compile and steps)
    bin_s = max(0.25, (active[1] - active[0]) / 1e9 / STEADY_BINS)
    assert window["from_s"] == pytest.approx(steady[0], abs=bin_s), (window, steady)
    assert window["to_s"] == pytest.approx(steady[1], abs=bin_s), (window, steady)
    assert report["verdict"]["kind"] == "gpu-bound", report["verdict"]  # as the job says
    steps = report["what_if"]["steps"]
    assert steps["steps_per_s"] == pytest.approx(job["steps_per_s"], rel=0.1), (steps, job)
