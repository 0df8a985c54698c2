"""The Kernels tab's launches/s under kernel sampling: counted over traced time only.

A real CUPTI recording of a launch-bound decode (the 8 s eager decode traced in full,
``recordings/sampling/eager-decode-every-kernel.gtop``), and the same recording as kernel
sampling would have recorded it (tests/analysis/sampled.py: the records launched in each
off phase dropped, the ``untraced`` rows added): per traced second, each kernel's rate
stays that of the full recording; per second of the whole span it would fall by the
untraced share.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gtop.core.hub import Update
from gtop.core.model import Model
from gtop.recordings.reader import Recording
from gtop.views.tabs.kernels_tab import _Kernels, _KernelSnap, window_kernels
from gtop.views.tabs.session_data import TabWindow
from tests.analysis.sampled import DutyCycle, sample

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"
DECODE = RECORDINGS / "sampling" / "eager-decode-every-kernel.gtop"
PID = 698
"""The decoding process of the recording."""


def kernels(batches: dict[str, np.ndarray], t0: int, t1: int) -> _Kernels:
    """The Kernels tab's sums over a replay's window ``[t0, t1)`` of ``batches``."""
    model = Model()
    model.apply(Update(batches=batches), t1)
    seconds = (t1 - t0) / 1e9 + 1
    snap = _KernelSnap(
        model.slice("kernel", seconds),
        model.slice("untraced", seconds),
        TabWindow(t0, t1, 0, t0),
        {},
    )
    return window_kernels(snap, PID)


def rates(result: _Kernels) -> dict[str, float]:
    """Launches per traced second of each kernel of the decoding process."""
    return {r.name: r.count / (result.traced_ns / 1e9) for r in result.rows}


@pytest.fixture(scope="module")
def streams() -> tuple[dict[str, np.ndarray], int, int]:
    rec = Recording(DECODE)
    t0, t1 = rec.time_range()
    try:
        return {name: rec.read(name, t0, t1 + 1) for name in rec.streams}, t0, t1
    finally:
        rec.close()


def test_rates_are_per_traced_second(streams) -> None:
    data, t0, t1 = streams
    full = kernels(data, t0, t1 + 1)
    rows = data["kernel"]
    active = DutyCycle(int(rows["t_ns"].min()), int(rows["end_ns"].max()))
    sampled = kernels(sample(data, active), t0, t1 + 1)
    assert full.traced_ns == full.span_ns
    assert sampled.traced_ns < 0.5 * sampled.span_ns  # off 0.6 s of every 1.0 s
    want, got = rates(full), rates(sampled)
    busy = [r.name for r in full.rows if r.count >= 2000]
    assert len(busy) >= 5
    for name in busy:  # a steady loop: each kernel's rate is the same in traced time
        assert got[name] == pytest.approx(want[name], rel=0.1), name


def test_the_window_counts_only_its_kernels(streams) -> None:
    """Counts are of the window, not of the history before it (the issue: the top
    kernel read 12,727 at 0:08.7 and 24,552 at END)."""
    data, t0, t1 = streams
    whole = kernels(data, t0, t1 + 1)
    first = kernels(data, t0, t0 + (t1 - t0) // 2)
    second = kernels(data, t0 + (t1 - t0) // 2, t1 + 1)
    count = {r.name: r.count for r in whole.rows}
    halves = {r.name: r.count for r in first.rows}
    for r in second.rows:
        halves[r.name] = halves.get(r.name, 0) + r.count
    assert halves == count
    assert first.label == f"0.0–{(t1 - t0) // 2 / 1e9:.1f} s"
