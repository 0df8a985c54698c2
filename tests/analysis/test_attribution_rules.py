"""Each attribution rule on a small hand-built case whose answer is known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gtop.analysis.attribution.causes import LABELS, Cause
from gtop.analysis.attribution.partition import Unit, attribute
from gtop.analysis.attribution.records import Records, mark_comm
from gtop.core.layouts import ApiClass, BlockReason, ThreadState
from tests.analysis.build import api, copy, kernel, records, state, wait

ON, RUN, BLK = ThreadState.ON_CPU, ThreadState.RUNNABLE, ThreadState.BLOCKED
DEV0 = Unit("device", 0)


def causes(
    rec: Records,
    t0: int = 0,
    t1: int = 100,
    unit: Unit = DEV0,
    level: str = "device",
    launch_gap_ns: int = 0,
):
    """Totals by label. Launch gaps are off unless asked for: these cases are a few ns
    long, far below the default ``launch_gap_ns``."""
    res = attribute(rec, t0, t1, level, launch_gap_ns=launch_gap_ns)[unit]
    return {LABELS[c]: int(n) for c, n in enumerate(res.totals) if n}


def two_kernels(gap_states: list, gap_apis: list = ()) -> Records:
    """Kernels [0,40) and [60,100), launched by thread 100; the gap [40,60) is host time."""
    return records(
        kernels=[kernel(0, 40, corr=1), kernel(60, 100, corr=2)],
        apis=[api(-5, -1, corr=1), *gap_apis],
        states=gap_states,
    )


@pytest.mark.parametrize(
    ("name", "rec", "expected"),
    [
        (
            "busy loop",
            two_kernels([state(40, 60, ON)], [api(55, 60, corr=2)]),
            {"G:COMP": 80, "H:APP": 15, "H:CTRL": 5},
        ),
        (
            "sleep",
            two_kernels(
                [state(40, 58, BLK, reason=BlockReason.SLEEP), state(58, 60, ON)],
                [api(58, 60, corr=2)],
            ),
            {"G:COMP": 80, "OFF_CPU": 18, "H:CTRL": 2},
        ),
        (
            "file read",
            two_kernels([state(40, 60, BLK, reason=BlockReason.IO)], [api(59, 60, corr=2)]),
            {"G:COMP": 80, "H:IO": 20},
        ),
        (
            "lock",
            two_kernels([state(40, 60, BLK, reason=BlockReason.LOCK)]),
            {"G:COMP": 80, "OFF_CPU": 20},
        ),
        (
            "poll wait",
            two_kernels([state(40, 60, BLK, reason=BlockReason.POLL)]),
            {"G:COMP": 80, "OFF_CPU": 20},
        ),
        (
            "run queue",
            two_kernels([state(40, 50, RUN), state(50, 60, ON)]),
            {"G:COMP": 80, "OFF_CPU": 10, "H:APP": 10},
        ),
        (
            "blocked in sync call",
            two_kernels(
                [state(40, 60, BLK, reason=BlockReason.GPU_WAIT)], [api(30, 60, cls=ApiClass.SYNC)]
            ),
            {"G:COMP": 80, "H:WAIT_GPU": 20},
        ),
        (
            "spinning in sync call",
            two_kernels([state(40, 60, ON)], [api(30, 60, cls=ApiClass.SYNC)]),
            {"G:COMP": 80, "H:WAIT_GPU": 20},
        ),
        (
            "polling with queries",
            two_kernels([state(40, 60, ON)], [api(40, 50, cls=ApiClass.QUERY)]),
            {"G:COMP": 80, "H:WAIT_GPU": 10, "H:APP": 10},
        ),
        (
            "GPU_WAIT reason without API data",
            two_kernels([state(40, 60, BLK, reason=BlockReason.GPU_WAIT)]),
            {"G:COMP": 80, "H:WAIT_GPU": 20},
        ),
        (
            "inside a launch call",
            two_kernels([state(40, 60, ON)], [api(45, 60, corr=2)]),
            {"G:COMP": 80, "H:APP": 5, "H:CTRL": 15},
        ),
        (
            "blocked inside an alloc call",
            two_kernels(
                [state(40, 60, BLK, reason=BlockReason.LOCK)], [api(40, 60, cls=ApiClass.ALLOC)]
            ),
            {"G:COMP": 80, "OFF_CPU": 20},
        ),
        (
            "nested runtime and driver calls count once",
            two_kernels(
                [state(40, 60, ON)], [api(40, 60, corr=2), api(45, 55, cls=ApiClass.LAUNCH)]
            ),
            {"G:COMP": 80, "H:CTRL": 20},
        ),
        (
            "spinning in a sync call seen by uprobes only (no API data)",
            two_kernels([state(40, 50, ON, reason=BlockReason.GPU_WAIT), state(50, 60, ON)]),
            {"G:COMP": 80, "H:WAIT_GPU": 10, "H:APP": 10},
        ),
        (
            "runnable while yielding inside a sync call",
            two_kernels([state(40, 60, RUN, reason=BlockReason.GPU_WAIT)]),
            {"G:COMP": 80, "H:WAIT_GPU": 20},
        ),
        (
            "on-CPU inside a read syscall, either side of blocking in it",
            two_kernels(
                [
                    state(40, 44, ON),
                    state(44, 46, ON, reason=BlockReason.IO),
                    state(46, 56, BLK, reason=BlockReason.IO),
                    state(56, 58, ON, reason=BlockReason.IO),
                    state(58, 60, ON),
                ],
            ),
            {"G:COMP": 80, "H:APP": 6, "H:IO": 14},
        ),
        (
            "on-CPU inside an I/O syscall within a (non-sync) API call",
            two_kernels(
                [state(40, 50, ON, reason=BlockReason.IO), state(50, 60, ON)],
                [api(45, 60, corr=2)],
            ),
            {"G:COMP": 80, "H:IO": 10, "H:CTRL": 10},
        ),
        (
            "a sync call wins over an I/O syscall",
            two_kernels(
                [state(40, 60, ON, reason=BlockReason.IO)], [api(50, 60, cls=ApiClass.SYNC)]
            ),
            {"G:COMP": 80, "H:IO": 10, "H:WAIT_GPU": 10},
        ),
        ("no host data", two_kernels([]), {"G:COMP": 80, "UNKNOWN": 20}),
    ],
)
def test_host_causes(name: str, rec: Records, expected: dict) -> None:
    assert causes(rec) == expected, name


@pytest.mark.parametrize(
    ("name", "rec", "launch_gap_ns", "expected"),
    [
        (
            "short gap between launches is launch path",
            two_kernels([state(40, 60, ON)], [api(36, 41, corr=3), api(55, 60, corr=2)]),
            20,
            {"G:COMP": 80, "H:CTRL": 20},
        ),
        (
            "long gap between launches is app code",
            two_kernels([state(40, 60, ON)], [api(36, 41, corr=3), api(55, 60, corr=2)]),
            10,
            {"G:COMP": 80, "H:CTRL": 6, "H:APP": 14},
        ),
        (
            "the rule off",
            two_kernels([state(40, 60, ON)], [api(36, 41, corr=3), api(55, 60, corr=2)]),
            0,
            {"G:COMP": 80, "H:CTRL": 6, "H:APP": 14},
        ),
        (
            "a sync call does not bound a launch gap",
            two_kernels(
                [state(40, 60, ON)],
                [api(38, 45, cls=ApiClass.SYNC), api(55, 60, corr=2)],
            ),
            1000,
            {"G:COMP": 80, "H:WAIT_GPU": 5, "H:APP": 10, "H:CTRL": 5},
        ),
        (
            "other calls inside a launch gap do not break it",
            two_kernels(
                [state(40, 60, ON)],
                [api(36, 41, corr=3), api(45, 47, cls=ApiClass.OTHER), api(55, 60, corr=2)],
            ),
            20,
            {"G:COMP": 80, "H:CTRL": 20},
        ),
        (
            "blocked inside a launch gap stays off-CPU",
            two_kernels(
                [state(40, 45, ON), state(45, 50, BLK, reason=BlockReason.LOCK), state(50, 60, ON)],
                [api(36, 41, corr=3), api(55, 60, corr=2)],
            ),
            20,
            {"G:COMP": 80, "H:CTRL": 15, "OFF_CPU": 5},
        ),
        (
            "on-CPU inside an I/O syscall in a launch gap is I/O",
            two_kernels(
                [state(40, 45, ON, reason=BlockReason.IO), state(45, 60, ON)],
                [api(36, 41, corr=3), api(55, 60, corr=2)],
            ),
            20,
            {"G:COMP": 80, "H:IO": 5, "H:CTRL": 15},
        ),
        (
            "no state data inside a launch gap stays unknown",
            two_kernels([state(55, 60, ON)], [api(36, 41, corr=3), api(55, 60, corr=2)]),
            20,
            {"G:COMP": 80, "H:CTRL": 6, "UNKNOWN": 14},
        ),
        (
            "a copy and a graph launch bound a launch gap too",
            two_kernels(
                [state(40, 60, ON)],
                [api(36, 41, cls=ApiClass.MEMCPY), api(55, 60, corr=2, cls=ApiClass.GRAPH_LAUNCH)],
            ),
            20,
            {"G:COMP": 80, "H:CTRL": 20},
        ),
    ],
)
def test_launch_gaps(name: str, rec: Records, launch_gap_ns: int, expected: dict) -> None:
    assert causes(rec, launch_gap_ns=launch_gap_ns) == expected, name


def test_compute_hides_an_overlapping_copy() -> None:
    rec = records(
        kernels=[kernel(10, 50)], copies=[copy(30, 70), copy(60, 80)], states=[state(0, 100, ON)]
    )
    assert causes(rec) == {"G:COMP": 40, "G:XFER": 30, "H:APP": 30}


def test_overlapping_kernels_count_once() -> None:
    rec = records(kernels=[kernel(0, 60, stream=7), kernel(20, 100, stream=8)])
    assert causes(rec) == {"G:COMP": 100}


def test_submitted_but_not_started_is_queue() -> None:
    rec = records(
        kernels=[kernel(0, 40, corr=1), kernel(60, 100, corr=2, submitted=45)],
        apis=[api(42, 45, corr=2)],
        states=[state(0, 100, ON)],
    )
    assert causes(rec) == {"G:COMP": 80, "H:APP": 2, "H:CTRL": 3, "G:QUEUE": 15}


def test_api_end_is_the_submit_time_without_latency_stamps() -> None:
    rec = records(
        kernels=[kernel(0, 40, corr=1), kernel(60, 100, corr=2)],
        apis=[api(42, 45, corr=2)],
        states=[state(0, 100, ON)],
    )
    assert causes(rec) == {"G:COMP": 80, "H:APP": 2, "H:CTRL": 3, "G:QUEUE": 15}


def test_stream_wait_event_gates_the_next_op_as_stall() -> None:
    # Stream 8's kernel was submitted at 5 behind a wait on an event that stream 7's
    # kernel [10, 30) records; it runs at 50. The dependency is taken to resolve at 30
    # (the last end on the device before 50): [5, 30) is a stall, [30, 50) queueing.
    rec = records(
        kernels=[kernel(10, 30, corr=1, stream=7), kernel(50, 90, corr=2, stream=8)],
        apis=[api(0, 2, corr=1), api(3, 5, corr=2)],
        waits=[wait(2, stream=8)],
        states=[state(0, 100, ON)],
    )
    stream8 = Unit("stream", 0, 100, 8)
    assert causes(rec, unit=stream8, level="stream") == {
        "G:COMP": 40,
        "H:CTRL": 4,
        "H:APP": 11,
        "G:STALL": 25,
        "G:QUEUE": 20,
    }
    # On the device, stream 7's own queueing [2, 10) hides the stall.
    assert causes(rec) == {"G:COMP": 60, "H:CTRL": 2, "H:APP": 10, "G:QUEUE": 28}


def test_gap_is_charged_to_the_thread_that_submits_the_next_op() -> None:
    rec = records(
        kernels=[kernel(0, 40, corr=1), kernel(60, 100, corr=2)],
        apis=[api(-5, -1, corr=1, tid=100), api(55, 60, corr=2, tid=101)],
        states=[state(0, 100, BLK, reason=BlockReason.SLEEP, tid=100), state(0, 100, ON, tid=101)],
    )
    res = attribute(rec, 0, 100)[DEV0]
    assert {LABELS[c]: int(n) for c, n in enumerate(res.totals) if n} == {
        "G:COMP": 80,
        "H:APP": 15,
        "H:CTRL": 5,
    }
    assert set(res.partition.tids[res.partition.causes >= Cause.H_CTRL].tolist()) == {101}
    assert res.threads == (100, 101)


def test_gap_at_the_window_end_falls_back_to_the_previous_op() -> None:
    rec = records(
        kernels=[kernel(0, 40, corr=1)],
        apis=[api(-5, -1, corr=1, tid=101)],
        states=[
            state(0, 100, BLK, reason=BlockReason.SLEEP, tid=100),
            state(0, 100, BLK, reason=BlockReason.IO, tid=101),
        ],
    )
    assert causes(rec) == {"G:COMP": 40, "H:IO": 60}


def test_without_api_records_the_main_thread_is_charged() -> None:
    rec = records(
        kernels=[kernel(0, 40, pid=100)],
        states=[state(0, 100, BLK, reason=BlockReason.SLEEP, tid=100), state(0, 100, ON, tid=101)],
    )
    assert causes(rec) == {"G:COMP": 40, "OFF_CPU": 60}


def test_window_edges_clip_everything() -> None:
    rec = two_kernels([state(0, 100, ON)], [api(55, 60, corr=2)])
    assert causes(rec, 30, 70) == {"G:COMP": 20, "H:APP": 15, "H:CTRL": 5}


def test_op_submitted_before_the_window_end_charges_the_final_gap() -> None:
    rec = records(
        kernels=[kernel(0, 40, corr=1), kernel(200, 300, corr=2)],
        apis=[api(-5, -1, corr=1, tid=100), api(70, 80, corr=2, tid=101)],
        states=[state(0, 300, ON, tid=101)],
    )
    assert causes(rec) == {"G:COMP": 40, "H:APP": 30, "H:CTRL": 10, "G:QUEUE": 20}


def test_stream_unit_is_off_while_another_stream_runs() -> None:
    rec = records(
        kernels=[kernel(0, 50, stream=7, corr=1), kernel(0, 100, stream=8, corr=2)],
        apis=[api(-3, -1, corr=1), api(-3, -1, corr=2), api(50, 100, cls=ApiClass.SYNC)],
    )
    assert causes(rec, unit=Unit("stream", 0, 100, 7), level="stream") == {
        "G:COMP": 50,
        "H:WAIT_GPU": 50,
    }
    assert causes(rec, unit=Unit("process", 0, 100), level="process") == {"G:COMP": 100}


def test_units_per_process_and_device() -> None:
    rec = records(
        kernels=[
            kernel(0, 10, pid=100, device=0),
            kernel(0, 30, pid=200, device=0),
            kernel(0, 50, pid=100, device=1),
        ]
    )
    assert set(attribute(rec, 0, 100, "process")) == {
        Unit("process", 0, 100),
        Unit("process", 0, 200),
        Unit("process", 1, 100),
    }
    assert set(attribute(rec, 0, 100)) == {Unit("device", 0), Unit("device", 1)}
    assert attribute(rec, 0, 100)[Unit("device", 1)].gar == 0.5


def test_panels_and_inflation_factors() -> None:
    # Thread 100: on-CPU 50, runnable 20, blocked 30. Ops: kernel submitted at 10, eligible
    # at 10, starts at 20, runs to 60 (queue 10, service 40); the next is submitted at 30
    # behind it (dependency wait 30 to 60), starts at 70 (queue 10), runs to 90 (20).
    rec = records(
        kernels=[kernel(20, 60, corr=1, submitted=10), kernel(70, 90, corr=2, submitted=30)],
        apis=[api(5, 10, corr=1), api(25, 30, corr=2)],
        states=[state(0, 50, ON), state(50, 70, RUN), state(70, 100, BLK, reason=2)],
    )
    res = attribute(rec, 0, 100)[DEV0]
    assert res.panels == {
        "OFF-CPU^dep": 30,
        "OFF-CPU^queue": 20,
        "OFF-GPU^dep": 30,
        "OFF-GPU^queue": 20,
    }
    assert res.service == {"cpu": 50, "gpu": 60}
    inf = res.inflation()
    assert inf["cpu"] == {"qif": pytest.approx(70 / 50), "dif": pytest.approx(80 / 50)}
    assert inf["gpu"] == {"qif": pytest.approx(80 / 60), "dif": pytest.approx(90 / 60)}


def test_inflation_without_service_is_nan() -> None:
    rec = records(kernels=[kernel(200, 300, corr=1)], apis=[api(10, 20, corr=1)])
    inf = attribute(rec, 0, 100)[DEV0].inflation()
    assert math.isnan(inf["gpu"]["qif"]) and math.isnan(inf["cpu"]["dif"])


def test_empty_window_is_refused() -> None:
    with pytest.raises(ValueError):
        attribute(Records(), 5, 5)


def test_communication_kernels_are_g_comm() -> None:
    """A communication kernel (name id 2, marked as NCCL) is G:COMM where no compute
    kernel runs; compute wins where both run; a copy under it counts as G:COMM too."""
    rec = records(
        kernels=[kernel(0, 30, corr=1), kernel(20, 80, corr=2, name=2, stream=8)],
        copies=[copy(60, 90, corr=3, stream=9)],
        apis=[api(-5, -1, corr=1), api(-4, -2, corr=2), api(-3, -2, corr=3)],
    )
    mark_comm(rec.ops, np.array([2]))
    got = causes(rec)
    assert got["G:COMP"] == 30 and got["G:COMM"] == 50 and got["G:XFER"] == 10
    res = attribute(rec, 0, 100)[DEV0]
    assert res.gar == pytest.approx(0.9)
    assert int(res.totals[Cause.G_COMM]) == 50
