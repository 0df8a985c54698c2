"""Putting recordings made by different gtop processes (or hosts) on one clock.

Every recording keeps CLOCK_MONOTONIC nanoseconds and stores, when it starts, its
host's ``CLOCK_REALTIME - CLOCK_MONOTONIC`` and boot id. Two recordings of one boot share
the monotonic clock exactly. Across hosts the realtime clocks (NTP) put them within
about a millisecond; the ranks of a job then leave each collective together, so matching
the ends of their collective calls refines the offset (:func:`refine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

TOLERANCE_NS = 10_000_000
"""How far a collective's ends on two hosts may lie apart after the realtime offset."""
MIN_PAIRS = 5


class Offset(NamedTuple):
    ns: int
    """Add to the other recording's times to put them on the reference's clock."""
    basis: str
    """``same boot``, ``realtime`` or ``realtime + collectives``."""
    pairs: int = 0
    """Collective ends matched for the refinement."""


def initial(ref: Mapping[str, Any], other: Mapping[str, Any]) -> Offset | None:
    """The offset from two recordings' ``clock`` metadata, or None when one lacks it."""
    a, b = ref.get("clock") or {}, other.get("clock") or {}
    if a.get("boot_id") and a.get("boot_id") == b.get("boot_id"):
        return Offset(0, "same boot")
    ra, rb = a.get("realtime_minus_monotonic_ns"), b.get("realtime_minus_monotonic_ns")
    if not isinstance(ra, int) or not isinstance(rb, int):
        return None
    return Offset(rb - ra, "realtime")


def refine(ref_ends: np.ndarray, other_ends: np.ndarray, start: Offset) -> Offset:
    """``start`` corrected by the median distance from each of the other recording's
    collective ends (shifted by ``start``) to the nearest reference end within
    :data:`TOLERANCE_NS`; ``start`` itself with fewer than :data:`MIN_PAIRS` pairs or
    when both share a boot (their clocks are one already)."""
    if start.basis == "same boot" or not len(ref_ends) or not len(other_ends):
        return start
    ref = np.sort(np.asarray(ref_ends, np.int64))
    shifted = np.asarray(other_ends, np.int64) + start.ns
    pos = np.clip(np.searchsorted(ref, shifted), 1, max(len(ref) - 1, 1))
    left = ref[pos - 1]
    right = ref[np.minimum(pos, len(ref) - 1)]
    nearest = np.where(np.abs(left - shifted) <= np.abs(right - shifted), left, right)
    gap = nearest - shifted
    close = np.abs(gap) <= TOLERANCE_NS
    if close.sum() < MIN_PAIRS:
        return start
    return Offset(start.ns + int(np.median(gap[close])), "realtime + collectives", int(close.sum()))
