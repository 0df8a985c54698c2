"""gtop report reads each chunk once (the exact half of benchmarks/report_guard.py),
and its one pass gives what reading the chosen window alone gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gtop.analysis.report.document import build_report
from gtop.recordings.clipped import ClippedRecording
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_inputs, read_report, read_report_data
from tests.by_path import load

REPO = Path(__file__).resolve().parents[2]
speed = load("benchmarks/attribution_speed.py")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """12 s of a launch-heavy loop at 20k kernels/s: 4 kernel chunks, in time order."""
    path = tmp_path_factory.mktemp("guard") / "synthetic.gtop"
    batches = speed.synthetic(10 * speed.NS, 12, 20_000, api_records=False)
    speed.write_recording(path, batches)
    return path


def decoded_twice(rec: Recording) -> dict[str, tuple[int, int]]:
    chunks = {s: len(rec.chunks(s)) for s in rec.streams}
    return {s: (n, chunks[s]) for s, n in rec.decoded.items() if n > chunks[s]}


@pytest.mark.parametrize("name", ["train_loop_cupti.gtop", "ddp-straggler-cpu.gtop"])
def test_a_report_decodes_each_chunk_once(name: str) -> None:
    with Recording(REPO / "recordings" / name) as rec:
        read_report(rec)
        assert decoded_twice(rec) == {}


def test_a_synthetic_report_decodes_each_chunk_once(synthetic: Path) -> None:
    with Recording(synthetic) as rec:
        read_report(rec)
        assert len(rec.chunks("kernel")) >= 4 and decoded_twice(rec) == {}


@pytest.mark.parametrize("window", [(None, None), ("2.5", "7.5"), ("steady", "6"), ("1", None)])
def test_one_pass_is_reading_the_window_alone(synthetic: Path, window) -> None:
    """The report from one pass over the whole work (the window's cut chunks decoded
    again: one per cut) is the one made from the window's rows alone."""
    with Recording(synthetic) as rec:
        inputs = read_inputs(rec, *window)
        w = inputs.window
        cuts = sum(
            1 for t in (w.t0, w.t1) if any(c.t_first < t <= c.t_last for c in rec.chunks("kernel"))
        )
        assert rec.decoded["kernel"] <= len(rec.chunks("kernel")) + cuts
        data, kernels = read_report_data(ClippedRecording(rec, w))
        assert inputs.kernels is not None and kernels is not None
        span = (w.t0, w.t1 - 1)
        one = build_report(rec.meta, inputs.data, [], [], span, inputs.kernels)
        alone = build_report(rec.meta, data, [], [], span, kernels)
    assert json.dumps(one) == json.dumps(alone)
    assert sum(k["count"] for k in one["kernels"]) > 10_000
