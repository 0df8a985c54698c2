"""Map CUPTI timestamps onto CLOCK_MONOTONIC nanoseconds.

The agent samples ``(monotonic before, cuptiGetTimestamp, monotonic after)`` triples; a
fit over a sliding window of them gives

    mono = cupti + offset_ns + (scale - 1) * (cupti - ref_ns)

anchored at ``ref_ns`` (the newest sample's CUPTI time) so that ``scale`` near 1 never
costs precision. The fit is published as a ``clock_fit`` entity and stored in
recordings, with ``t_ns`` the monotonic time it was made.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

WINDOW = 120
"""Samples kept for the fit (the agent sends about one a second)."""
MIN_SPAN_NS = 1_000_000_000
"""Below this span of samples the scale is taken as exactly 1."""
REFIT_NS = 100
"""A new fit is published when it moves mapped times by more than this."""


@dataclass(frozen=True)
class ClockFit:
    offset_ns: int
    scale: float
    ref_ns: int
    t_ns: int

    def to_mono(self, ts: np.ndarray) -> np.ndarray:
        """CUPTI timestamps (uint64, 0 = unknown) to monotonic ns (int64, -1 = unknown)."""
        raw = ts.astype(np.int64)
        mono = raw + self.offset_ns
        if self.scale != 1.0:
            mono += np.rint((raw - self.ref_ns) * (self.scale - 1.0)).astype(np.int64)
        return np.where(raw == 0, -1, mono)

    def map_one(self, ts: int) -> int:
        return int(self.to_mono(np.array([ts], dtype=np.uint64))[0])

    def value(self) -> dict[str, Any]:
        return {
            "offset_ns": self.offset_ns,
            "scale": self.scale,
            "ref_ns": self.ref_ns,
            "t_ns": self.t_ns,
        }


IDENTITY = ClockFit(0, 1.0, 0, 0)


def fit(samples: Sequence[tuple[int, int, int]]) -> ClockFit:
    """Fit ``(mono_before, cupti, mono_after)`` samples; the tightest ones weigh most.

    Raises:
        ValueError: no samples.
    """
    if not samples:
        raise ValueError("no clock samples")
    arr = np.array(samples, dtype=np.int64)
    gap = arr[:, 2] - arr[:, 0]
    keep = arr[gap <= 2 * max(int(gap.min()), 1)]
    cupti = keep[:, 1]
    mono = keep[:, 0] + (keep[:, 2] - keep[:, 0]) // 2
    ref = int(arr[-1, 1])
    x = (cupti - ref).astype(np.float64)
    offsets = mono - cupti  # exact integers; floats only for small differences below
    base = int(offsets[-1])
    y = (offsets - base).astype(np.float64)
    scale = 1.0
    if len(keep) >= 2 and int(cupti.max() - cupti.min()) >= MIN_SPAN_NS:
        slope = np.polyfit(x, y, 1)[0]
        scale = 1.0 + float(slope)
    offset = base + int(np.rint(np.mean(y - (scale - 1.0) * x)))
    return ClockFit(offset, scale, ref, int(arr[-1, 2]))


class ClockTracker:
    """The current fit over a sliding window of samples."""

    def __init__(self) -> None:
        self._samples: deque[tuple[int, int, int]] = deque(maxlen=WINDOW)
        self.current = IDENTITY
        self.fitted = False

    def add(self, samples: Sequence[Sequence[int]]) -> ClockFit | None:
        """Add samples; return the new fit when it moved enough to publish, else None."""
        for s in samples:
            self._samples.append((int(s[0]), int(s[1]), int(s[2])))
        if not self._samples:
            return None
        new = fit(list(self._samples))
        moved = abs(new.map_one(new.ref_ns) - self.current.map_one(new.ref_ns))
        if self.fitted and moved <= REFIT_NS:
            return None
        self.current = new
        self.fitted = True
        return new
