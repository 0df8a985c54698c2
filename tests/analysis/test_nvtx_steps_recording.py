"""Steps from NVTX ranges on a real recording: ``recordings/nvtx-steps.gtop`` (+ ``.json``,
the workload's own steps/s), ``benchmarks/workloads/nvtx_steps.py`` recorded on an H200
in the default mode, the middle 1.5 s of its steady window (``gpu_session.sh`` step
``nvtx-recording``: ``nvtx-steps-excerpt.gtop``): ``train_step`` around each step,
``forward`` and ``backward`` nested in it (issue 25 item 2)."""

from __future__ import annotations

import json

import pytest

from gtop.analysis.diagnosis.range_steps import find_range_steps, range_names
from gtop.analysis.diagnosis.what_if import regular_steps
from gtop.analysis.report.report_text import format_report
from gtop.recordings.clipped import choose
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_inputs, read_report, report_of
from gtop.recordings.timeline import read_timeline
from tests.analysis.recordings import RECORDINGS

RECORDING = RECORDINGS / "nvtx-steps.gtop"
TRUTH = json.loads((RECORDINGS / "nvtx-steps.json").read_text())


def test_the_step_range_is_chosen_over_the_ranges_nested_in_it() -> None:
    with Recording(RECORDING) as rec:
        markers, names, window = rec.read("marker"), range_names(rec.entities()), choose(rec)
    assert {"train_step", "forward", "backward"} <= set(names.values())
    found = find_range_steps(markers, names, window.t0, window.t1)
    assert found is not None and found.name == "train_step" and found.cover > 0.8
    # the nested ranges repeat once a step too, on the same thread, but cover less
    forward = [i for i, n in names.items() if n == "forward"]
    only = markers[markers["name_id"] == forward[0]]
    nested = find_range_steps(only, names, window.t0, window.t1)
    assert nested is None or nested.cover < found.cover


def test_the_report_states_the_nvtx_steps_at_the_loops_pace() -> None:
    with Recording(RECORDING) as rec:
        report = read_report(rec)
    steps = report["what_if"]["steps"]
    assert steps["source"] == "nvtx" and steps["range"] == "train_step", steps
    assert steps["step_s"] == pytest.approx(1 / TRUTH["steps_per_s"], rel=0.1)
    text = " ".join(format_report(report).split())
    assert "steps/s, from NVTX range 'train_step'" in text


def test_the_what_if_replays_measure_the_nvtx_steps() -> None:
    with Recording(RECORDING) as rec:
        tl = read_timeline(rec)
    assert tl is not None and tl.step_range == "train_step" and tl.steps is not None
    a = regular_steps(tl)
    assert len(a) >= 10
    step_s = float(tl.start[a[-1]] - tl.start[a[0]]) / (len(a) - 1) / 1e9
    assert step_s == pytest.approx(1 / TRUTH["steps_per_s"], rel=0.1)


def test_without_the_ranges_the_steps_are_not_said_to_be_nvtxs() -> None:
    with Recording(RECORDING) as rec:
        inputs = read_inputs(rec)
        del inputs.data["marker"]
        steps = report_of(rec, inputs)["what_if"]["steps"]
    assert steps is None or steps["source"] == "kernels"
