"""Vectorised operations on sets of half-open integer intervals ``[start, end)``.

A :class:`Spans` is *normal*: sorted by start, every interval non-empty, and no two
intervals overlapping or touching (``ends[i] < starts[i + 1]``). Every function here
returns normal spans, so results can be compared, measured and combined without a
second pass. The sweeps over sorted endpoints run in C where :mod:`gtop.analysis.compiled`
loads (the same arrays as the numpy reference kept beside each, ``*_reference``); the rest
is numpy on whole arrays; nothing loops per interval in Python.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from gtop.analysis import compiled

I64 = np.int64


class Spans(NamedTuple):
    """A normal set of half-open intervals (see the module docstring)."""

    starts: np.ndarray
    ends: np.ndarray

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.starts)

    def measure(self) -> int:
        """Total length in the time unit of the inputs (ns)."""
        return int((self.ends - self.starts).sum())


EMPTY = Spans(np.empty(0, I64), np.empty(0, I64))


def union(starts: np.ndarray, ends: np.ndarray) -> Spans:
    """The union of arbitrary (unsorted, overlapping, possibly empty) intervals."""
    s = np.asarray(starts, I64)
    e = np.asarray(ends, I64)
    got = compiled.union(s, e)
    if got is None and compiled.LIB is not None:  # starts out of order: sorted first
        keep = e > s
        order = np.argsort(s[keep], kind="stable")
        got = compiled.union(s[keep][order], e[keep][order])
    if got is None:
        return union_reference(s, e)
    return Spans(*got) if len(got[0]) else EMPTY


def union_reference(s: np.ndarray, e: np.ndarray) -> Spans:
    """:func:`union` of int64 arrays in numpy."""
    keep = e > s
    s, e = s[keep], e[keep]
    if not len(s):
        return EMPTY
    if np.any(s[1:] < s[:-1]):
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    first[1:] = s[1:] > reach[:-1]
    heads = np.flatnonzero(first)
    lasts = np.append(heads[1:] - 1, len(s) - 1)
    return Spans(s[heads], reach[lasts])


def clip(spans: Spans, t0: int, t1: int) -> Spans:
    """``spans ∩ [t0, t1)``."""
    s = np.maximum(spans.starts, t0)
    e = np.minimum(spans.ends, t1)
    keep = e > s
    return Spans(s[keep], e[keep])


def complement(spans: Spans, t0: int, t1: int) -> Spans:
    """``[t0, t1) \\ spans``."""
    c = clip(spans, t0, t1)
    s = np.concatenate(([t0], c.ends)).astype(I64)
    e = np.concatenate((c.starts, [t1])).astype(I64)
    keep = e > s
    return Spans(s[keep], e[keep])


def intersect(a: Spans, b: Spans) -> Spans:
    """``a ∩ b`` by one sweep over the merged endpoints (both inputs normal)."""
    if not len(a) or not len(b):
        return EMPTY
    got = compiled.intersect(a.starts, a.ends, b.starts, b.ends)
    if got is None:
        return intersect_reference(a, b)
    return Spans(*got) if len(got[0]) else EMPTY


def intersect_reference(a: Spans, b: Spans) -> Spans:
    """:func:`intersect` of non-empty sets in numpy."""
    times = np.concatenate((a.ends, b.ends, a.starts, b.starts))
    steps = np.concatenate(
        (np.full(len(a) + len(b), -1, np.int8), np.ones(len(a) + len(b), np.int8))
    )
    # Stable sort on four sorted runs (cheap); ends were put first, so at equal times an
    # interval closes before the next opens, which keeps the intervals half-open.
    order = np.argsort(times, kind="stable")
    times = times[order]
    depth = np.cumsum(steps[order], dtype=np.int32)
    both = np.flatnonzero(depth == 2)
    s, e = times[both], times[both + 1]
    keep = e > s
    return Spans(s[keep], e[keep])


def subtract(a: Spans, b: Spans) -> Spans:
    """``a \\ b`` (both normal)."""
    if not len(a) or not len(b):
        return a
    return intersect(a, complement(b, int(a.starts[0]), int(a.ends[-1])))


def owner(spans: Spans, points: np.ndarray) -> np.ndarray:
    """Index of the interval of ``spans`` containing each point, or -1.

    ``spans`` need only be sorted and disjoint (touching is fine).
    """
    got = compiled.owner(spans.starts, spans.ends, points)
    return owner_reference(spans, points) if got is None else got


def owner_reference(spans: Spans, points: np.ndarray) -> np.ndarray:
    """:func:`owner` in numpy."""
    j = last_at_or_before(spans.starts, points)
    inside = j >= 0
    inside[inside] = spans.ends[j[inside]] > points[inside]
    return np.where(inside, j, -1)


def last_at_or_before(sorted_keys: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``searchsorted(sorted_keys, points, "right") - 1``; when ``points`` are sorted too
    and at least as many as the keys, without a search per point: for many more points,
    by one search per key and a running count; else by merging the two sorted arrays
    (a stable sort of two runs puts each point after the keys at or before it)."""
    if len(points) >= len(sorted_keys) // 16:  # a merge in C, for sorted points enough
        got = compiled.search(sorted_keys, points, "right", -1)
        if got is not None:
            return got
    return last_at_or_before_reference(sorted_keys, points)


def search(sorted_keys: np.ndarray, points: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(sorted_keys, points, side)``; for sorted integer points not much
    fewer than the keys, by one merge in C instead of a binary search per point."""
    if len(points) >= len(sorted_keys) // 16:
        got = compiled.search(sorted_keys, points, side)
        if got is not None:
            return got
    return np.searchsorted(sorted_keys, points, side=side)


def last_at_or_before_reference(sorted_keys: np.ndarray, points: np.ndarray) -> np.ndarray:
    """:func:`last_at_or_before` in numpy."""
    n = len(sorted_keys)
    if len(points) < max(n, 1) or not bool(np.all(points[1:] >= points[:-1])):
        return np.searchsorted(sorted_keys, points, side="right") - 1
    if len(points) > 8 * n:
        first_point = np.searchsorted(points, sorted_keys, side="left")
        counts = np.bincount(first_point, minlength=len(points) + 1)[: len(points)]
        return np.cumsum(counts) - 1
    merged = np.argsort(np.concatenate((sorted_keys, points)), kind="stable")
    return np.flatnonzero(merged >= n) - np.arange(len(points)) - 1


def pair_ranks(
    keys: np.ndarray, times: np.ndarray, qkeys: np.ndarray, qtimes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, times)`` pairs, sorted by key then time, and query pairs as int64 codes
    such that ``searchsorted(codes, qcodes, "right")`` finds what a search of the pairs
    for each ``(qkey, qtime)`` would (numpy searches a structured array ~50x slower).

    A code is the key's rank among the distinct keys (high 32 bits) and the time's rank
    among the sorted times (low bits); a query's key that is not among ``keys`` ranks
    below every pair of the next key."""
    distinct = keys[run_heads(keys)]
    sorted_times = np.sort(times)
    codes = (np.searchsorted(distinct, keys) << 32) | (
        np.searchsorted(sorted_times, times, side="left") + 1
    )
    at = np.searchsorted(distinct, qkeys)
    known = distinct[np.minimum(at, len(distinct) - 1)] == qkeys if len(distinct) else at < 0
    qranks = np.where(known, np.searchsorted(sorted_times, qtimes, side="right"), 0)
    return codes, (at << 32) | qranks


def take(values: np.ndarray, index: np.ndarray, fill: int) -> np.ndarray:
    """``values[index]`` where ``index >= 0``, else ``fill`` (``values`` may be empty)."""
    dtype = np.result_type(values.dtype, np.min_scalar_type(fill))
    if len(values) and dtype == values.dtype:  # no cast: one pass in C
        got = compiled.take(values, index, dtype.type(fill))
        if got is not None:
            return got
    return take_reference(values, index, fill)


def take_reference(values: np.ndarray, index: np.ndarray, fill: int) -> np.ndarray:
    """:func:`take` in numpy."""
    dtype = np.result_type(values.dtype, np.min_scalar_type(fill))
    if not len(values):
        return np.full(len(index), fill, dtype)
    got = np.take(values, index, mode="clip").astype(dtype, copy=False)
    missing = index < 0
    if missing.any():
        got = np.where(missing, dtype.type(fill), got)
    return got


def clipped_measure(starts: np.ndarray, ends: np.ndarray, t0: int, t1: int) -> int:
    """How much of ``[t0, t1)`` the union of ``[starts, ends)`` covers (overlaps once)."""
    return clip(union(starts, ends), t0, t1).measure()


def clipped_total(starts: np.ndarray, ends: np.ndarray, t0: int, t1: int) -> int:
    """Sum of the lengths of ``[starts, ends) ∩ [t0, t1)``, overlaps counted each time."""
    lengths = np.minimum(ends, t1) - np.maximum(starts, t0)
    return int(lengths[lengths > 0].sum())


def canonical_order(keys: list[np.ndarray]) -> np.ndarray:
    """Indices that sort rows lexicographically by ``keys[0]``, then ``keys[1]``, ...

    Cheap when ``keys[0]`` has few ties: one stable argsort, and a lexsort of the tied
    rows only. Used wherever a rule picks "the first" of several records, so results
    never depend on the order in which records arrived.
    """
    order = np.argsort(keys[0], kind="stable")
    if len(keys) == 1 or len(order) < 2:
        return order
    k0 = keys[0][order]
    tied = np.flatnonzero(k0[1:] == k0[:-1])
    if not len(tied):
        return order
    rows = np.union1d(tied, tied + 1)
    sub = order[rows]
    sub_order = np.lexsort([k[sub] for k in reversed(keys)])
    order[rows] = sub[sub_order]
    return order


def group_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``: rows grouped by key, each group in row order;
    by counting in C when the keys are integers with few distinct values."""
    got = compiled.group_order(keys)
    return np.argsort(keys, kind="stable") if got is None else got


def unique_sorted(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (runs of equal values are dropped before sorting; the sort
    is numpy's stable one, which merges already-sorted runs, as concatenated interval
    endpoints are, about twice as fast as the default)."""
    v = np.sort(values[run_heads(values)], kind="stable")
    return v[run_heads(v)]


def dense_index(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct keys sorted, index of each key among them)``; small non-negative
    integer keys (ids, stream numbers) through a lookup table instead of a sort."""
    if _small_ints(keys):
        present = np.bincount(keys) > 0
        return np.flatnonzero(present).astype(keys.dtype), (np.cumsum(present) - 1)[keys]
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    heads = run_heads(k)
    step = np.zeros(len(k), np.int64)
    step[heads[1:]] = 1
    inverse = np.empty(len(k), np.int64)
    inverse[order] = np.cumsum(step)
    return k[heads], inverse


def unique_columns(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of integer ``columns`` (equal lengths) sorted, as a 2-D int64
    array, and each row's index among them (int64), without numpy's sort of whole rows
    nor a stacked copy: each column is densely indexed and a row's indices are packed
    into one int64 (numpy's way when they do not fit)."""
    if not len(columns[0]):
        return np.empty((0, len(columns)), np.int64), np.empty(0, np.int64)
    # a column of one value (one process, one API domain) is its own index: no lookup
    indexed = [(c[:1], None) if c.min() == c.max() else dense_index(np.asarray(c)) for c in columns]
    radix = [len(values) for values, _ in indexed]
    if math.prod(radix) >= 2**63:
        rows = np.stack([np.asarray(c, np.int64) for c in columns], axis=1)
        distinct, inverse = np.unique(rows, axis=0, return_inverse=True)
        return distinct, inverse.reshape(-1).astype(np.int64)
    key = np.zeros(len(columns[0]), np.int64)
    for (_, index), r in zip(indexed, radix, strict=True):
        if index is not None:
            key *= r
            key += index
    packed, inverse = dense_index(key)
    out = np.empty((len(packed), len(columns)), np.int64)
    for k in reversed(range(len(columns))):
        packed, index = np.divmod(packed, radix[k])
        out[:, k] = indexed[k][0][index]
    return out, inverse


def _small_ints(keys: np.ndarray) -> bool:
    """Integer keys in ``[0, max(2 * len, 65536)]``: a table over their range is cheap."""
    if keys.dtype.kind not in "iu" or not np.can_cast(keys.dtype, np.intp) or not len(keys):
        return False
    return int(keys.min()) >= 0 and int(keys.max()) <= max(2 * len(keys), 1 << 16)


def runs(values: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of equal values in ``values``."""
    return list(itertools.pairwise([*run_heads(values).tolist(), len(values)]))


def run_heads(values: np.ndarray) -> np.ndarray:
    """Positions where a run of equal values starts in ``values``."""
    if not len(values):
        return np.empty(0, np.int64)
    change = np.empty(len(values), dtype=bool)
    change[0] = True
    change[1:] = values[1:] != values[:-1]
    return np.flatnonzero(change)
