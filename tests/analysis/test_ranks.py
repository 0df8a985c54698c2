"""Ranks, roles and straggler wait on real recordings of a 2-rank job in which rank 1
sleeps 20 ms per step (``benchmarks/capture_ddp.py``; the ``.json`` beside each
recording holds what the ranks measured themselves: their all-reduce enter/exit times).

A recording is checked when it is committed (:data:`PRESENT`); a listed one whose files
are missing fails.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from gtop.analysis.distributed.collectives import comm_name
from gtop.analysis.distributed.roles import tree_order
from gtop.recordings.ranks_data import analyse_recording
from gtop.recordings.reader import Recording

from .recordings import RECORDINGS

PRESENT = ("ddp-straggler-cpu", "ddp-straggler-gpu")


def _truth(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / f"{name}.json").read_text())


@pytest.fixture(scope="module", params=PRESENT)
def case(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    name = request.param
    truth = _truth(name)
    found = analyse_recording(str(RECORDINGS / f"{name}.gtop"), tuple(truth["window_ns"]))
    assert found is not None, f"{name}: no ranks found"
    return truth, found


def test_slowest_rank_is_named(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    truth, found = case
    assert found["slowest_rank"] == truth["slow_rank"]


def test_straggler_wait_within_tolerance(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    truth, found = case
    for entry in found["ranks"]:
        want = truth["ranks"][str(entry["rank"])]["straggler_wait_share"]
        got = entry["straggler_wait_share"]
        assert abs(got - want) * 100 <= truth["tolerance_pp"], (entry["rank"], got, want)


def test_collectives_matched_per_step(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Nearly every step's all-reduce is found on both ranks and matched."""
    truth, found = case
    assert 0.9 * truth["steps"] <= found["collectives"] <= truth["steps"]


def test_time_in_collectives_follows_the_ranks_own_clocks(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    truth, found = case
    for entry in found["ranks"]:
        want = truth["ranks"][str(entry["rank"])]["collective_s"]
        assert abs(entry["collective_s"] - want) <= 0.05 * truth["duration_s"]
        assert entry["pid"] == truth["ranks"][str(entry["rank"])]["pid"]


def test_process_tree_roles() -> None:
    """torchrun is the root (launcher), the two workers are ranks 0 and 1 under it."""
    with Recording(RECORDINGS / "ddp-straggler-cpu.gtop") as rec:
        procs = {int(e.key): e.value for e in rec.entities("process")}
    order = tree_order(procs)
    assert [(depth, role.label()) for _, depth, role in order] == [
        (0, "launcher"),
        (1, "rank 0"),
        (1, "rank 1"),
    ]


@pytest.mark.parametrize(
    ("name", "collective"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllReduce"),
        ("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "AllGather"),
        ("_Z24ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "SendRecv"),
        ("ampere_sgemm_128x64_nn", None),
        ("", None),
    ],
)
def test_comm_name(name: str, collective: str | None) -> None:
    assert comm_name(name) == collective


def test_no_ranks_in_a_single_process_recording() -> None:
    assert analyse_recording(str(RECORDINGS / "train_loop_cupti.gtop")) is None


def test_truth_window_inside_recording() -> None:
    truth = _truth("ddp-straggler-cpu")
    with Recording(RECORDINGS / "ddp-straggler-cpu.gtop") as rec:
        t0, t1 = rec.time_range()
    assert t0 < truth["window_ns"][0] < truth["window_ns"][1] < t1
    assert np.isclose(truth["sleep_ms"], 20.0)


def test_report_has_a_ranks_section() -> None:
    """``gtop report`` (JSON and text) over the whole recording names rank 1."""
    from gtop.analysis.report.document import build_report
    from gtop.analysis.report.report_text import format_report
    from gtop.recordings.report_data import read_report_data

    with Recording(RECORDINGS / "ddp-straggler-cpu.gtop") as rec:
        data, kernels = read_report_data(rec)
        report = build_report(
            rec.meta, data, rec.entities(), rec.problems, rec.time_range(), kernels
        )
    ranks = report["ranks"]
    assert [e["rank"] for e in ranks["ranks"]] == [0, 1]
    assert ranks["slowest_rank"] == 1
    text = format_report(report)
    assert "Slowest rank: 1." in text
    assert sorted(p["role"] for p in report["processes"]) == ["launcher", "rank 0", "rank 1"]
    assert "launcher: " in text and "rank 1: " in text
    with Recording(RECORDINGS / "train_loop_cupti.gtop") as rec:
        data, kernels = read_report_data(rec)
        single = build_report(rec.meta, data, rec.entities(), [], rec.time_range(), kernels)
    assert single["ranks"] is None and "Ranks (" not in format_report(single)


def test_step_overlap() -> None:
    """Communication [10,20) and [30,40); compute hides [15,20) and [30,40): the step
    ending at 25 had half its communication hidden, the next one all of it."""
    from gtop.analysis import intervals as iv
    from gtop.analysis.distributed.ranks import measure_before, step_overlap

    comm = iv.Spans(np.array([10, 30]), np.array([20, 40]))
    hidden = iv.Spans(np.array([15, 30]), np.array([20, 40]))
    assert measure_before(comm, np.array([0, 15, 25, 35, 99])).tolist() == [0, 5, 10, 15, 20]
    assert step_overlap(comm, hidden, np.array([45, 0, 25])).tolist() == [0.5, 1.0]
    assert np.isnan(step_overlap(comm, hidden, np.array([50, 60]))).all()


def test_collectives_come_from_host_waits_or_nccl_kernels(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    truth, found = case
    for entry in found["ranks"]:
        if truth["backend"] == "nccl":  # NCCL kernels: the collectives are GPU work
            assert entry["collective_source"] == "gpu" and entry["overlap"] is not None
            continue
        assert entry["collective_source"] == "host"
        assert entry["overlap"] is None and entry["overlap_per_step"] is None


@pytest.mark.parametrize(("name", "workers"), [("slow_loader", 2), ("loader-8-workers", 8)])
def test_dataloader_workers_under_their_main(name: str, workers: int) -> None:
    """Real training loops with DataLoader workers (H100/H200 recordings)."""
    with Recording(RECORDINGS / f"{name}.gtop") as rec:
        procs = {int(e.key): e.value for e in rec.entities("process")}
    order = tree_order(procs)
    assert order[0][1:] == (0, order[0][2]) and order[0][2].label() == "main"
    assert [(depth, role.label()) for _, depth, role in order[1:]] == [(1, "loader")] * workers


def test_communication_under_compute_counts_as_overlap() -> None:
    """An NCCL kernel [0,100) on stream 8 with a compute kernel [20,60) beside it: 100 ns
    in the collective, 40% of it overlapped, 60 ns of G:COMM as attributed."""
    from gtop.analysis.attribution.records import mark_comm
    from gtop.analysis.distributed.ranks import Job, analyse

    from .build import kernel, records

    procs = {
        1: {"pid": 1, "ppid": 0, "dist": {"RANK": 0}, "cmdline": ["python", "a.py"]},
        2: {"pid": 2, "ppid": 0, "dist": {"RANK": 1}, "cmdline": ["python", "a.py"]},
    }
    rec = records(
        kernels=[
            kernel(0, 100, pid=1, stream=8, name=7),
            kernel(20, 60, pid=1, name=1),
            kernel(70, 100, pid=2, stream=8, name=7),
        ]
    )
    mark_comm(rec.ops, np.array([7]))
    found = analyse(Job(procs, rec, {}, {7: "ncclDevKernel_AllReduce_Sum_f32_RING_LL"}), 0, 200)
    r0, r1 = found["ranks"]
    assert r0["collective_source"] == "gpu" and r0["collective_s"] == pytest.approx(100e-9)
    assert r0["on"]["G:COMM"] == pytest.approx(60e-9) and r0["overlap"] == pytest.approx(0.4)
    assert r0["collectives"] == ["AllReduce"]
    assert r0["straggler_wait_s"] == pytest.approx(70e-9) and r1["straggler_wait_s"] == 0
    assert found["slowest_rank"] == 1
