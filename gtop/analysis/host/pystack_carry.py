"""Python stacks for waits that no py-spy read landed in, carried from sampled twins.

Pure: the host collector applies it as it records (:mod:`gtop.collectors.threads.pystacks`),
and the analysis applies it again over a whole recording (:mod:`gtop.analysis.host.thread_time`).
"""

from __future__ import annotations

import numpy as np

CARRY_NS = 2_000_000_000
"""How far (in time) an interval may be from the sampled one it takes Python frames from."""


def carry(
    key: np.ndarray,
    t0: np.ndarray,
    t1: np.ndarray,
    py: np.ndarray,
    last: dict[tuple, tuple[int, int]] | None = None,
    max_gap_ns: int = CARRY_NS,
) -> np.ndarray:
    """Python stacks for intervals that no dump landed in, taken from sampled twins.

    py-spy reads a thread a few times a second, so most short waits hold no dump. An
    interval with no Python stack (``py < 0``) takes the one of the nearest interval
    (by the gap between them, at most ``max_gap_ns``) that has the same ``key`` row and
    whose stack came from a dump: same thread, same state and reason, and the same
    native+kernel stack. A thread that blocks again and again in the same place (a
    training loop's ``queue.get``) is almost always in the same Python call there; a
    different Python caller of the same native path within the window would be
    mislabelled, which the bound keeps rare. Carried stacks never donate.

    ``key`` is an ``(n, k)`` integer array; ``last`` (updated in place) holds each key's
    latest donor ``(end_ns, py)`` from earlier batches, so a batch can carry forward
    from the one before. Returns the new ``py`` array.
    """
    out = py.copy()
    if not len(py):
        return out
    groups, inverse = np.unique(key, axis=0, return_inverse=True)
    # each group's rows, in row order, from one stable sort (not one scan per group)
    by_group = np.argsort(inverse.reshape(-1), kind="stable")
    edges = np.searchsorted(inverse.reshape(-1)[by_group], np.arange(len(groups) + 1))
    for g, row in enumerate(map(tuple, groups.tolist())):
        sel = by_group[edges[g] : edges[g + 1]]
        donor = sel[py[sel] >= 0]
        d_t0, d_t1, d_py = t0[donor], t1[donor], py[donor]
        if last is not None and row in last:
            end, idx = last[row]
            d_t0, d_t1, d_py = np.r_[end, d_t0], np.r_[end, d_t1], np.r_[idx, d_py]
        if last is not None and len(donor):
            i = donor[np.argmax(t1[donor])]
            if row not in last or last[row][0] <= t1[i]:
                last[row] = (int(t1[i]), int(py[i]))
        need = sel[py[sel] < 0]
        if not len(d_py) or not len(need):
            continue
        order = np.argsort(d_t0, kind="stable")
        d_t0, d_t1, d_py = d_t0[order], d_t1[order], d_py[order]
        end_max = np.maximum.accumulate(d_t1)
        # of the donors starting before the interval ends, the one ending last; and the
        # first donor starting after it
        latest = np.maximum.accumulate(np.where(d_t1 == end_max, np.arange(len(d_t1)), 0))
        pos = np.searchsorted(d_t0, t1[need], side="right")
        before = latest[np.maximum(pos - 1, 0)]
        after = np.minimum(pos, len(d_t0) - 1)
        never = np.iinfo(np.int64).max
        gap_b = np.where(pos > 0, np.maximum(t0[need] - d_t1[before], 0), never)
        gap_a = np.where(pos < len(d_t0), d_t0[after] - t1[need], never)
        take_b = gap_b <= gap_a
        gap = np.where(take_b, gap_b, gap_a)
        pick = np.where(take_b, before, after)
        ok = gap <= max_gap_ns
        out[need[ok]] = d_py[pick[ok]]
    return out
