"""The predicted gains of the verdict line's window (issue 25): the usual fixes ranked by
what each would buy, computed only where they are shown (``v``, or a line wide enough
for its prediction), not for every verdict: they cost about half as much again as the
verdict itself (1-1.9 s of a seek's 3-5 s on train_loop_cupti under load)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gtop.analysis.diagnosis.gains import Prediction, ranked, times
from gtop.views.tabs.gpu_time_tab import shared, summary

PENDING = " · predicted: computing…"
"""The line's tail while its gains are being computed."""


def window_gains(snap: Any, result: Any) -> list[Prediction]:
    """The usual fixes ranked by predicted gain (:func:`gtop.analysis.diagnosis.gains.ranked`) over
    the verdict's window, from its exact CUPTI records; none from NVML alone."""
    res = result.result if result is not None else None
    if res is None or not res.exact:
        return []
    entry = summary(snap, res)
    return ranked(
        snap.records, res.t0, res.t1, res.unit.device, entry, snap.kernel_names, snap.stacks
    )


def best(gains: list[Prediction]) -> str:
    """The line's tail naming the best fix (empty without one)."""
    return f" · predicted: {gains[0].fix} {times(gains[0].speedup)}" if gains else ""


@dataclass(frozen=True)
class GainsJob:
    """What the gains of one verdict are computed from: its snapshot and attribution."""

    snap: Any
    pid: int
    result: Any

    def compute(self) -> list[Prediction]:
        """Worker thread: the gains, done once per window (:func:`shared`)."""
        return shared("gains", self.snap, self.pid, lambda: window_gains(self.snap, self.result))
