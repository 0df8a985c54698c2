"""Putting recordings made by different gtop processes (or hosts) on one clock.

Every recording keeps CLOCK_MONOTONIC nanoseconds and stores, when it starts, its
host's ``CLOCK_REALTIME - CLOCK_MONOTONIC`` and boot id. Two recordings of one boot share
the monotonic clock exactly. Across hosts the realtime clocks (NTP) put them within
about a millisecond; the ranks of a job leave each collective together, and none leaves
before all have entered, so their matched collective calls refine the offset
(:func:`refine`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.distributed.collectives import match

TOLERANCE_NS = 10_000_000
"""How far a collective's ends on two hosts may lie apart after the realtime offset
(matched calls further apart are not used)."""
MIN_PAIRS = 5
ROUNDS = 4
"""Match, correct, match again: a first offset far off leaves pairs out of the tolerance."""
CONVERGED_NS = 100_000


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


def refine(ref_calls: iv.Spans, other_calls: iv.Spans, start: Offset) -> Offset:
    """``start`` corrected by the ranks' collective calls (each recording's calls of
    all its ranks, as spans), matched once moved by ``start``
    (:func:`gtop.analysis.distributed.collectives.match`).

    The correction is the median distance between matched ends (ranks leave a
    collective together), kept inside what causality allows: nobody leaves a collective
    before every rank has entered it, so each matched pair bounds the offset from both
    sides. ``start`` itself with fewer than :data:`MIN_PAIRS` pairs, or when both
    recordings share a boot (their clocks are one already).
    """
    if start.basis == "same boot" or not len(ref_calls) or not len(other_calls):
        return start
    offset, pairs = start.ns, 0
    for _ in range(ROUNDS):
        step, used = _correction(ref_calls, other_calls, offset)
        if step is None:
            break
        offset, pairs = offset + step, used
        if abs(step) < CONVERGED_NS:
            break
    if not pairs:
        return start
    return Offset(offset, "realtime + collectives", pairs)


def _correction(ref_calls: iv.Spans, other_calls: iv.Spans, offset: int) -> tuple[int | None, int]:
    """One round of :func:`refine`: the correction to ``offset`` and the pairs used."""
    moved = iv.Spans(other_calls.starts + offset, other_calls.ends + offset)
    found = match([ref_calls, moved])
    ends, starts = found.ends, found.starts
    near = np.abs(ends[:, 0] - ends[:, 1]) <= TOLERANCE_NS
    if near.sum() < MIN_PAIRS:
        return None, 0
    ends, starts = ends[near], starts[near]
    shift = int(np.median(ends[:, 0] - ends[:, 1]))
    lo = int((starts[:, 0] - ends[:, 1]).max())
    hi = int((ends[:, 0] - starts[:, 1]).min())
    if lo <= hi:
        shift = min(max(shift, lo), hi)
    return shift, int(near.sum())
