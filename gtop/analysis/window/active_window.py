"""The window a diagnosis covers: the target's active time, not gtop's whole recording.

A recording starts before the target has a CUDA context (interpreter start, imports,
building the model) and may end after its last kernel (shutdown, or gtop waiting for
it to exit). Charged over the whole recording, that time is off-GPU with no GPU work to
explain it and drowns the answer. So attribution covers the **active window**: from the
target's first GPU activity (kernel, copy or memset start) to its last (end), or to the
end of the kernel sampling off phase that the last ran into; or its
**steady state** (the longest stretch whose GPU busy share, of the time kernel sampling
traced, stays near that of the window's second half); or seconds given by the user. The
time before is its own labelled phase, ``startup``, described by its host stacks; the
time after is ``after``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gtop.analysis import intervals as iv

STEADY_BINS = 40
"""Bins of the active window that the steady-state search compares."""
STEADY_MIN_BIN_NS = 100_000_000
STEADY_TOLERANCE = 0.1
STEADY_MIN_BUSY = 0.5
"""A steady state holds at least this share of the window's GPU-busy time."""
"""A bin is steady when its smoothed busy share is within this (absolute) of the
reference share, or within a quarter of it when that is larger."""


@dataclass(frozen=True)
class Window:
    """``[t0, t1)`` in the recording's clock; ``kind``: ``active``, ``steady``, ``given``
    or ``recording`` (no GPU activity found: the whole recording)."""

    t0: int
    t1: int
    kind: str

    @property
    def duration_ns(self) -> int:
        return self.t1 - self.t0

    def label(self, r0: int) -> str:
        """The window as every view and ``gtop report`` name it, in seconds from the
        recording's start ``r0``: ``steady 4.4–8.3 s``, ``active 12.2–22.0 s``,
        ``whole recording 0.0–14.4 s``, ``4.0–9.0 s`` (given, or a replay's last seconds
        before its playhead: :class:`gtop.views.tabs.session_data.TabWindow`)."""
        span = f"{(self.t0 - r0) / 1e9:.1f}–{(self.t1 - r0) / 1e9:.1f} s"
        name = {"recording": "whole recording", "given": ""}.get(self.kind, self.kind)
        return f"{name} {span}".strip()


def active_span(starts: np.ndarray, ends: np.ndarray) -> tuple[int, int] | None:
    """First start to last end of the GPU work ``[starts, ends)``; None when there is none."""
    if not len(starts):
        return None
    return int(starts.min()), int(max(ends.max(), starts.max()))


def coverage(spans: iv.Spans, points: np.ndarray) -> np.ndarray:
    """For each point, how much of normal ``spans`` lies before it (ns)."""
    if not len(spans):
        return np.zeros(len(points), np.int64)
    lengths = spans.ends - spans.starts
    before = np.concatenate(([0], np.cumsum(lengths)))
    k = np.searchsorted(spans.starts, points, side="right") - 1
    inside = np.clip(points - spans.starts[np.maximum(k, 0)], 0, lengths[np.maximum(k, 0)])
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0)


def steady_edges(t0: int, t1: int) -> np.ndarray | None:
    """The bin edges the steady-state search uses over ``[t0, t1)``; None when the
    window is too short to split (fewer than 4 bins)."""
    bins = min(STEADY_BINS, (t1 - t0) // STEADY_MIN_BIN_NS)
    return np.linspace(t0, t1, bins + 1).astype(np.int64) if bins >= 4 else None


def busy_ns(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """GPU-busy ns of ``[starts, ends)`` (overlaps once) in each bin between ``edges``."""
    return np.diff(coverage(iv.union(starts, ends), edges))


def steady_span(
    edges: np.ndarray, busy: np.ndarray, traced: np.ndarray | None = None
) -> tuple[int, int] | None:
    """The steady state: from the first to the last bin whose busy share (``busy`` ns
    per bin between ``edges``, smoothed over 3 bins) is within
    :data:`STEADY_TOLERANCE` of the median share of the second half, so warm-up and
    wind-down are cut and dips inside are kept. A stretch must hold
    :data:`STEADY_MIN_BUSY` of the GPU's busy time: when the second half is mostly the
    idle wait before a short job's work (an 8-worker DataLoader starting for 3 s, then
    1.2 s of training), its median says "idle" and the idle wait would pass for the
    steady state; the last quarter's median is tried next. None when neither holds: the
    work has no steady state, and the whole span is what matters.

    ``traced``: ns per bin that kernel sampling traced (default: all of it); a share is
    of the traced ns, and a bin traced nowhere in its 3 takes its nearest neighbour's
    smoothed share (what was not traced is neither busy nor idle)."""
    width = np.diff(edges)
    traced = width if traced is None else np.minimum(traced, width)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.minimum(busy / traced, 1.0)
        smooth = _sum3(busy) / _sum3(traced)
    if not np.isfinite(smooth).any():
        return None
    smooth = _nearest_finite(np.minimum(smooth, 1.0))
    for tail in (2, 4):  # the second half; else the last quarter (a short job's work)
        half = share[len(share) - len(share) // tail :]
        half = half[np.isfinite(half)]
        if not len(half):
            continue
        ref = float(np.median(half))
        ok = np.flatnonzero(np.abs(smooth - ref) <= max(STEADY_TOLERANCE, ref / 4))
        if len(ok) and busy[ok[0] : ok[-1] + 1].sum() >= STEADY_MIN_BUSY * busy.sum():
            return int(edges[ok[0]]), int(edges[ok[-1] + 1])
    return None


def _sum3(values: np.ndarray) -> np.ndarray:
    """Each bin's value plus its two neighbours' (the edge bins repeated)."""
    return np.convolve(np.pad(values.astype(np.float64), 1, mode="edge"), np.ones(3), "valid")


def _nearest_finite(values: np.ndarray) -> np.ndarray:
    """NaNs replaced by the nearest finite value (the earlier one on a tie); at least one
    value must be finite."""
    ok = np.flatnonzero(np.isfinite(values))
    if len(ok) == len(values):
        return values
    i = np.arange(len(values))
    j = np.searchsorted(ok, i)  # the first finite at or after each bin
    left, right = ok[np.maximum(j - 1, 0)], ok[np.minimum(j, len(ok) - 1)]
    return values[np.where(np.abs(i - left) <= np.abs(right - i), left, right)]


def nvml_span(t: np.ndarray, util: np.ndarray, period_ns: int) -> tuple[int, int] | None:
    """From NVML samples (``util`` > 0 means busy during the ``period_ns`` before ``t``):
    the first to the last busy sample; None when none was busy."""
    busy = np.flatnonzero(util > 0)
    if not len(busy):
        return None
    return int(t[busy[0]]) - period_ns, int(t[busy[-1]])


def seconds_to_ns(start: int, seconds: float) -> int:
    """A time given as seconds from the recording's start."""
    return start + round(seconds * 1e9)
