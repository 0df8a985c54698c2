"""A ``torch.compile`` job on a real recording: ``recordings/compile-mlp.gtop`` (+ ``.json``,
the job's own timed steps), ``benchmarks/workloads/compile_mlp.py`` (a 6-layer MLP,
4096 wide, batch 1024) recorded on an H200 in the default mode, cut from 2 s before its
autotuning ended to 1.6 s into its 300 steady steps (``gpu_session.sh`` step
``compile-recording``). The compile and the autotuning are one-time phases, out of the
window; the window is the steps after them, GPU-bound, at the job's pace (issue 25
item 3)."""

from __future__ import annotations

import json

import pytest

from gtop.analysis.report.report_text import format_report
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from tests.analysis.recordings import RECORDINGS
from tests.by_path import load

RECORDING = RECORDINGS / "compile-mlp.gtop"
JOB = json.loads((RECORDINGS / "compile-mlp.json").read_text())


@pytest.fixture(scope="module")
def report() -> dict:
    with Recording(RECORDING) as rec:
        return read_report(rec)


def test_the_compile_and_the_autotuning_are_one_time_phases_before_the_window(report) -> None:
    once = {p["name"]: p for p in report["phases"] if p.get("one_time")}
    assert {"compilation", "autotuning"} <= set(once), report["phases"]
    window = report["window"]
    assert window["kind"] == "steady"
    assert window["from_s"] >= max(p["to_s"] for p in once.values()) - 0.01
    text = " ".join(format_report(report).split())
    assert "left out of the window; usual remedy: a compile cache" in text


def test_the_window_is_the_jobs_steady_steps_at_its_pace(report) -> None:
    with Recording(RECORDING) as rec:
        r0 = rec.time_range()[0]
    first_step = (JOB["window_ns"][0] - r0) / 1e9
    assert report["window"]["from_s"] == pytest.approx(first_step, abs=0.1)
    assert report["verdict"]["kind"] == "gpu-bound" and report["verdict"]["cause"] == "G:COMP"
    steps = report["what_if"]["steps"]
    assert steps["steps_per_s"] == pytest.approx(JOB["steps_per_s"], rel=0.05), steps


def test_no_kernels_went_missing_after_the_quiet_compile() -> None:
    """Recorded after the shim's fix: no hole in the launch order (before it, the same
    job lost the ~1,000 kernels queued on the GPU 0.2 s after its compile)."""
    with Recording(RECORDING) as rec:
        holes = load("benchmarks/kernel_gaps.py").holes(rec, 1500, 0.03)
        assert holes == [] and not rec.meta["drops"]
