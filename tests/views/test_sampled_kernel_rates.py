"""The Kernels tab's launches/s under kernel sampling: counted over traced time only.

A real CUPTI recording of a launch-bound decode, and the same recording as kernel
sampling would have recorded it (tests/analysis/sampled.py: the records launched in each
off phase dropped, the ``untraced`` rows added): per traced second, each kernel's rate
stays that of the full recording; per second of the whole span it would fall by the
untraced share.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gtop.core.hub import Entity, Update
from gtop.core.model import Model
from gtop.recordings.reader import Recording
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.tabs.session_data import SessionData, UntracedTime
from tests.analysis.sampled import DutyCycle, sample

DECODE = Path(__file__).resolve().parents[2] / "recordings" / "decode-eager.gtop"
PID = 2257
"""The decoding process of recordings/decode-eager.gtop."""


def session(batches: dict[str, np.ndarray], now_ns: int) -> SessionData:
    model = Model()
    model.apply(Update(batches=batches), now_ns)
    return SessionData(model)


def rates(data: SessionData) -> dict[int, float]:
    """Launches per traced second of each kernel name id of the decoding process."""
    seconds = data.traced_span_ns(PID) / 1e9
    return {nid: agg.count / seconds for nid, agg in data.kernels[PID]._by_id.items()}


@pytest.fixture(scope="module")
def streams() -> tuple[dict[str, np.ndarray], int, int]:
    rec = Recording(DECODE)
    t0, t1 = rec.time_range()
    try:
        return {name: rec.read(name, t0, t1 + 1) for name in rec.streams}, t0, t1
    finally:
        rec.close()


def test_rates_are_per_traced_second(streams) -> None:
    data, _, t1 = streams
    full = session(data, t1)
    kernels = data["kernel"]
    active = DutyCycle(int(kernels["t_ns"].min()), int(kernels["end_ns"].max()))
    sampled = session(sample(data, active), t1)
    lo, hi = sampled.kernel_span[PID]
    starts, ends = active.off_spans()
    off = np.clip(ends, lo, hi) - np.clip(starts, lo, hi)
    assert sampled.traced_span_ns(PID) == hi - lo - off.sum()
    assert sampled.traced_span_ns(PID) < 0.5 * (hi - lo)  # off 0.6 s of every 1.0 s
    want, got = rates(full), rates(sampled)
    busy = [nid for nid, agg in full.kernels[PID]._by_id.items() if agg.count >= 2000]
    assert len(busy) >= 5
    for nid in busy:  # a steady loop: each kernel's rate is the same in traced time
        assert got[nid] == pytest.approx(want[nid], rel=0.1), nid


def test_open_span_waits_and_tail_spans_clip_to_the_kernels() -> None:
    off = UntracedTime()
    off.add(100, 200)
    off.add(300, 450)  # ends after the last kernel (400): only its part before counts
    assert off.within(0, 400) == 100 + 100
    assert off.within(0, 500) == 100 + 150  # the kernels went on: all of it counts
    for k in range(UntracedTime.PENDING + 10):  # spans past the kernels stay bounded
        off.add(1000 + 10 * k, 1005 + 10 * k)
    assert len(off.pending) == UntracedTime.PENDING


def test_the_tab_says_kernels_are_sampled(streams) -> None:
    """The agent entity's ``sampling`` value, as the agent link publishes it
    (tests/agent/test_sampling_agent.py checks the link's side with a real agent)."""
    data, _, t1 = streams
    model = Model()
    value = {"state": "tracing", "kinds": ["kernel"], "sampling": {"duty": 0.33, "rate": 41_500}}
    model.apply(Update(batches=data, entities=[Entity("agent", str(PID), t1, value)]), t1)
    tab = KernelsTab(PID)
    assert tab._sampling(model) == (
        "Sampled: kernels traced 33% of the time (42k/s); rates per traced second"
    )
    value = {**value, "sampling": None}
    model.apply(Update(entities=[Entity("agent", str(PID), t1 + 1, value)]), t1 + 1)
    assert tab._sampling(model) == ""
