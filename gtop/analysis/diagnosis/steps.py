"""The iteration of a loop found in its GPU work: the repeating sequence of ops on the
busiest stream (a training step, a decoded token).

A period ``p`` is a lag at which the op sequence matches itself (the op at ``i`` is
the op at ``i + p``: same kind, same kernel); the smallest lag that divides the best
one and matches nearly as well is the iteration (twice a period matches as well, and a
model's repeated layers match less well: they break at the step's own ops). A step starts
at each occurrence of the rarest op of the period (the one that occurs once per step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_PERIOD = 2048
"""The longest iteration searched for, in ops."""
SAMPLE_OPS = 16_000
"""Ops of the middle of the sequence the period is searched in (the search costs
``SAMPLE_OPS * MAX_PERIOD`` comparisons at most)."""
MIN_MATCH = 0.8
"""A lag whose ops match less often than this is not an iteration."""
NEAR_BEST = 0.08
"""A lag that divides the best one and matches within this of it is the iteration (a
step that now and then runs one op more matches itself less well than two steps do)."""
MIN_STEPS = 3


@dataclass(frozen=True)
class Steps:
    """The iteration found: ``anchors`` index the op sequence given (the first op of
    each step), ``period`` is its length in ops, ``match`` how often a lag of one
    period repeats the op, ``symbol`` the op that starts a step."""

    anchors: np.ndarray
    period: int
    match: float
    symbol: int
    """The op that starts each step."""

    def span(self, starts: np.ndarray) -> tuple[int, int]:
        """First to last step start (whole steps only), by the ops' ``starts``."""
        return int(starts[self.anchors[0]]), int(starts[self.anchors[-1]])

    @property
    def count(self) -> int:
        """Whole steps between the first and the last anchor."""
        return len(self.anchors) - 1


def find_steps(symbols: np.ndarray) -> Steps | None:
    """The iteration of an op sequence (one integer per op: kind and kernel, in start
    order), or None when it does not repeat."""
    n = len(symbols)
    if n < 2 * MIN_STEPS:
        return None
    a = max(0, n // 2 - SAMPLE_OPS // 2)
    x = symbols[a : a + SAMPLE_OPS]
    top = min(MAX_PERIOD, len(x) // MIN_STEPS)
    if top < 1:
        return None
    match = np.array([np.count_nonzero(x[:-p] == x[p:]) / (len(x) - p) for p in range(1, top + 1)])
    best = float(match.max())
    if best < MIN_MATCH:
        return None
    best_lag = int(np.argmax(match)) + 1
    lags = np.flatnonzero(match >= best - NEAR_BEST) + 1
    period = int(lags[best_lag % lags == 0][0])
    values, counts = np.unique(x, return_counts=True)
    per_period = counts * period / len(x)
    once = np.abs(per_period - 1.0) < 0.25
    if not once.any():
        return None
    anchor = values[once][np.argmin(np.abs(per_period[once] - 1.0))]
    anchors = np.flatnonzero(symbols == anchor)
    if len(anchors) < MIN_STEPS + 1:
        return None
    return Steps(anchors, period, round(float(match[period - 1]), 3), int(anchor))
