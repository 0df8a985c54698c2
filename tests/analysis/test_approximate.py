"""The NVML-only approximation: flagged inexact, sums exact, shares as constructed."""

from __future__ import annotations

import numpy as np
import pytest

from gtop.analysis.attribution.approximate import approximate
from gtop.analysis.attribution.causes import LABELS
from gtop.core import layouts
from gtop.core.layouts import BlockReason, ThreadState
from tests.analysis.build import records, rows, sample, state

ON, BLK = ThreadState.ON_CPU, ThreadState.BLOCKED


def nvml(points: list[tuple[int, float]], gpu: int = 0) -> np.ndarray:
    return rows(layouts.GPU, [{"t_ns": t, "gpu": gpu, "util_gpu": u} for t, u in points])


def shares(res) -> dict[str, int]:
    return {LABELS[c]: int(n) for c, n in enumerate(res.totals) if n}


def test_util_and_host_states_split_each_period() -> None:
    # Period (0, 100]: 40% busy; the thread slept half of it and ran app code half.
    # Period (100, 200]: 100% busy.
    host = records(states=[state(0, 50, BLK, reason=BlockReason.SLEEP), state(50, 200, ON)])
    res = approximate(nvml([(0, 0), (100, 40), (200, 100)]), host, 0, 100, 0, 200)
    assert res.exact is False
    assert shares(res) == {"G:COMP": 140, "OFF_CPU": 30, "H:APP": 30}
    p = res.partition
    assert p.starts[0] == 0 and p.ends[-1] == 200
    assert np.array_equal(p.starts[1:], p.ends[:-1])
    assert res.panels["OFF-GPU^dep"] == -1 and np.isnan(res.inflation()["gpu"]["qif"])


def test_cuda_frames_in_samples_move_on_cpu_time_to_ctrl() -> None:
    host = records(
        states=[state(0, 100, ON)],
        samples=[
            sample(10, stack=1),
            sample(20, stack=2),
            sample(30, stack=2),
            sample(40, stack=2),
        ],
    )
    stacks = {1: ["main", "cudaLaunchKernel"], 2: ["main", "step"]}
    res = approximate(nvml([(0, 0), (100, 20)]), host, 0, 100, 0, 100, stacks)
    assert shares(res) == {"G:COMP": 20, "H:CTRL": 20, "H:APP": 60}


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        ([(0, 0), (100, 50)], {"G:COMP": 50, "UNKNOWN": 50}),  # no host data
        ([(50, 0), (100, 100)], {"UNKNOWN": 50, "G:COMP": 50}),  # window edge not covered
        ([(0, 0), (100, float("nan"))], {"UNKNOWN": 100}),  # sample without a value
        ([], {"UNKNOWN": 100}),
    ],
)
def test_unknown_is_explicit(samples, expected) -> None:
    res = approximate(nvml(samples), records(), 0, 100, 0, 100)
    assert shares(res) == expected
    assert int(res.totals.sum()) == 100
