"""Slices, the GPU-centric flamegraph and the report section on hand-built cases."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gtop.analysis.attribution import slices
from gtop.analysis.attribution.causes import LABELS, Cause
from gtop.analysis.attribution.gpu_flame import fold
from gtop.analysis.attribution.partition import Unit, attribute
from gtop.analysis.report.gpu_report import gpu_report
from gtop.core.layouts import ApiClass, BlockReason, CopyKind, ThreadState
from tests.analysis.build import api, copy, kernel, records, sample, state

ON, BLK = ThreadState.ON_CPU, ThreadState.BLOCKED
NAMES = {1: "gemm", 2: "relu"}
STACKS = {
    7: ["main", "torch.cuda.synchronize"],
    8: ["main", "time.sleep"],
    9: ["main", "busy;loop"],
    10: ["main", "cudaLaunchKernel"],
}


@pytest.fixture
def rec():
    # [0,10) gemm, [10,15) blocked in sync, [15,25) app code, [25,28) launch, [28,30) queue,
    # [30,40) relu, [40,45) H2D copy, [45,50) spinning in a sync call, [50,60) asleep.
    return records(
        kernels=[kernel(0, 10, corr=1, name=1), kernel(30, 40, corr=2, name=2)],
        copies=[copy(40, 45, kind=CopyKind.HTOD)],
        apis=[api(25, 28, corr=2), api(45, 50, cls=ApiClass.SYNC)],
        states=[
            state(0, 15, BLK, reason=BlockReason.GPU_WAIT, stack=7),
            state(15, 50, ON),
            state(50, 60, BLK, reason=BlockReason.SLEEP, stack=8),
        ],
        samples=[sample(16, stack=9), sample(26, stack=10), sample(46, stack=10)],
    )


def test_slice_occupancy_sums_to_each_slice(rec) -> None:
    res = attribute(rec, 0, 60)[Unit("device", 0)]
    edges = slices.edges(0, 60, 7)
    occ = slices.occupancy(res.partition, edges)
    assert occ.sum(axis=1).tolist() == np.diff(edges).tolist()
    assert occ.sum(axis=0).tolist() == res.totals.tolist()
    assert slices.dominant(occ)[0] == Cause.G_COMP


def test_edges_reject_bad_slices() -> None:
    with pytest.raises(ValueError):
        slices.edges(0, 10, 0)


def test_fold_gives_each_cause_its_exact_time(rec) -> None:
    res = attribute(rec, 0, 60)[Unit("device", 0)]
    folded = fold(res, rec, NAMES, STACKS, slice_ns=5, max_stack_age_ns=5)
    # the slice [25, 30) holds 3 ns of launching and 2 of queue: each gets its own
    assert folded == {
        "ON_GPU;G:COMP;gemm": 10,
        "OFF_GPU;H:WAIT_GPU;main;torch.cuda.synchronize": 5,
        "OFF_GPU;H:APP;main;busy:loop": 10,
        "OFF_GPU;H:CTRL;main;cudaLaunchKernel": 3,
        "OFF_GPU;G:QUEUE;relu": 2,
        "ON_GPU;G:COMP;relu": 10,
        "ON_GPU;G:XFER;HTOD": 5,
        "OFF_GPU;H:WAIT_GPU;main;cudaLaunchKernel": 5,
        "OFF_GPU;OFF_CPU;main;time.sleep": 10,
    }
    per_cause = {label: 0 for label in LABELS}
    for stack, ns in folded.items():
        per_cause[stack.split(";")[1]] += ns
    assert list(per_cause.values()) == res.totals.tolist()


def test_fold_names_the_waiting_op_and_the_busiest_kernel() -> None:
    rec = records(
        kernels=[
            kernel(0, 3, name=1, corr=1),
            kernel(3, 10, name=2, corr=2),
            kernel(20, 30, name=2, corr=3, submitted=10),
        ],
        apis=[api(5, 10, corr=3)],
        states=[state(0, 30, ON)],
    )
    res = attribute(rec, 0, 30)[Unit("device", 0)]
    assert fold(res, rec, NAMES, slice_ns=10) == {
        "ON_GPU;G:COMP;relu": 20,
        "OFF_GPU;G:QUEUE;relu": 10,
    }


def test_stale_samples_give_no_stack() -> None:
    rec = records(
        kernels=[kernel(0, 10, corr=1)],
        apis=[api(-2, -1, corr=1)],
        states=[state(0, 100, ON)],
        samples=[sample(1, stack=9)],
    )
    res = attribute(rec, 0, 100)[Unit("device", 0)]
    # Slice [0, 50): the sample at 1 is within 10 ns of the first H:APP segment (at 10).
    assert fold(res, rec, NAMES, STACKS, slice_ns=50, max_stack_age_ns=10) == {
        "ON_GPU;G:COMP;gemm": 10,
        "OFF_GPU;H:APP;main;busy:loop": 40,
        "OFF_GPU;H:APP": 50,
    }


def test_report_section(rec) -> None:
    report = gpu_report(rec, 0, 60, NAMES, STACKS, slice_ns=5, top=2)
    assert list(report) == ["0"]
    dev = report["0"]
    json.dumps(dev, allow_nan=False)
    assert dev["exact"] is True
    assert dev["duration_s"] == pytest.approx(60e-9)
    assert dev["gar"] == pytest.approx(25 / 60)
    assert dev["on"] == pytest.approx({"G:COMP": 20e-9, "G:XFER": 5e-9, "G:COMM": 0.0})
    assert dev["off"] == pytest.approx(
        {
            "H:CTRL": 3e-9,
            "H:APP": 10e-9,
            "H:WAIT_GPU": 10e-9,
            "H:IO": 0.0,
            "OFF_CPU": 10e-9,
            "G:QUEUE": 2e-9,
            "G:STALL": 0.0,
            "UNKNOWN": 0.0,
        }
    )
    total = sum(dev["on"].values()) + sum(dev["off"].values())
    assert total == pytest.approx(dev["duration_s"], rel=1e-9)
    assert set(dev["panels"]) == {"OFF-CPU^dep", "OFF-CPU^queue", "OFF-GPU^dep", "OFF-GPU^queue"}
    assert dev["top_off_gpu_stacks"] == [
        {"stack": "OFF_GPU;H:APP;main;busy:loop", "seconds": pytest.approx(10e-9)},
        {"stack": "OFF_GPU;OFF_CPU;main;time.sleep", "seconds": pytest.approx(10e-9)},
    ]


@pytest.mark.parametrize("slice_ns", [1, 5, 7])
def test_fold_without_on_gpu_leaves_keeps_the_off_gpu_stacks(rec, slice_ns: int) -> None:
    res = attribute(rec, 0, 60)[Unit("device", 0)]
    full = fold(res, rec, NAMES, STACKS, slice_ns)
    lean = fold(res, rec, NAMES, STACKS, slice_ns, on_gpu_leaves=False)
    assert sum(full.values()) == sum(lean.values()) == 60
    off = {k: v for k, v in full.items() if k.startswith("OFF_GPU;")}
    assert {k: v for k, v in lean.items() if k.startswith("OFF_GPU;")} == off
    assert all(k in ("ON_GPU;G:COMP", "ON_GPU;G:XFER") for k in lean if k.startswith("ON_GPU"))


def test_occupancy_cuts_segments_at_slice_edges() -> None:
    # Segments [0,7) code 1, [7,8) code 0, [10,31) code 2 over slices of 5 on [0,30).
    occ = slices.occupancy_of(
        np.array([0, 7, 10]), np.array([7, 8, 31]), np.array([1, 0, 2]), 3, slices.edges(0, 30, 5)
    )
    assert occ.tolist() == [[0, 5, 0], [1, 2, 0], [0, 0, 5], [0, 0, 5], [0, 0, 5], [0, 0, 5]]


@pytest.mark.parametrize("in_order", [True, False])
def test_report_of_kernel_chunks_matches_report_of_kernel_rows(tmp_path, in_order: bool) -> None:
    """``read_report_data`` sums and projects the kernel table chunk by chunk; the report
    is the one made from the whole table (chunks out of time order: read as rows)."""
    from gtop.analysis.report.document import build_report
    from gtop.core import layouts
    from gtop.recordings.reader import Recording
    from gtop.recordings.report_data import read_report_data
    from gtop.recordings.writer import RecordingWriter

    rng = np.random.default_rng(3)
    batches = []
    for c in range(3):
        k = layouts.KERNEL.empty(50)
        # Out of order: the chunks' time ranges overlap.
        k["t_ns"] = 50_000 * c * in_order + np.sort(rng.integers(0, 50_000, 50))
        k["end_ns"] = k["t_ns"] + rng.integers(1, 900, 50)
        k["pid"], k["stream"], k["correlation"] = 1, rng.integers(1, 3, 50), np.arange(50) + 1
        k["name_id"], k["grid_x"] = rng.integers(1, 4, 50), 10 * c + rng.integers(0, 5, 50)
        batches.append(k)
    path = tmp_path / "k.gtop"
    writer = RecordingWriter(path, {"host": "test"})
    for k in batches:
        writer.append("kernel", k)
        writer.flush()
    writer.close()
    with Recording(path) as rec:
        data, digest = read_report_data(rec)
        assert (digest is None) == (not in_order) and ("kernel" in data) == (not in_order)
        chunked = build_report(rec.meta, data, [], [], rec.time_range(), digest)
        rows = {**data, "kernel": rec.read("kernel")}
        whole = build_report(rec.meta, rows, [], [], rec.time_range())
    assert json.dumps(chunked) == json.dumps(whole)
    assert sum(k["count"] for k in whole["kernels"]) == 150 and whole["gpu"]
