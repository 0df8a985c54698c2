"""Fixed time slices over a partition: how long each cause held each slice.

Used by the on/off-GPU ribbon (one cell per slice) and the GPU-centric flamegraph (one
folded stack per slice and cause). Slices start at ``t0``; the last one may be shorter.
"""

from __future__ import annotations

import numpy as np

from gtop.analysis import compiled
from gtop.analysis import intervals as iv
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.partition import Partition


def edges(t0: int, t1: int, slice_ns: int) -> np.ndarray:
    """Slice boundaries ``[t0, t0 + s, ..., t1]``.

    Raises:
        ValueError: ``slice_ns`` is not positive or the window is empty.
    """
    if slice_ns <= 0 or t1 <= t0:
        raise ValueError("slice_ns must be positive and the window non-empty")
    return np.append(np.arange(t0, t1, slice_ns, dtype=np.int64), np.int64(t1))


def occupancy(partition: Partition, slice_edges: np.ndarray) -> np.ndarray:
    """ns of each cause in each slice: shape ``(n_slices, len(Cause))``, int64."""
    return occupancy_of(partition.starts, partition.ends, partition.causes, len(Cause), slice_edges)


def occupancy_of(
    starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, n_codes: int, slice_edges: np.ndarray
) -> np.ndarray:
    """ns of each code in each slice, for sorted disjoint segments ``[starts, ends)``
    labelled with ``codes`` in ``range(n_codes)``: shape ``(n_slices, n_codes)``.

    One pass: each segment is cut at the slice edges it crosses (disjoint segments
    cross at most one edge each, so there are few cuts) and the pieces are summed.
    """
    got = compiled.occupancy(starts, ends, codes, n_codes, slice_edges)
    return occupancy_reference(starts, ends, codes, n_codes, slice_edges) if got is None else got


def occupancy_reference(
    starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, n_codes: int, slice_edges: np.ndarray
) -> np.ndarray:
    """:func:`occupancy_of` in numpy."""
    n = len(slice_edges) - 1
    s, e, c = np.asarray(starts, np.int64), np.asarray(ends, np.int64), np.asarray(codes)
    if len(s) and (s.min() < slice_edges[0] or e.max() > slice_edges[-1]):
        s, e = np.maximum(s, slice_edges[0]), np.minimum(e, slice_edges[-1])
    keep = e > s
    if not keep.all():
        s, e, c = s[keep], e[keep], c[keep]
    c = c.astype(np.int64)
    first, last = _slice_of(slice_edges, s), _slice_of(slice_edges, e - 1)
    # Whole segments into the slice they start in, then move what crosses edges.
    flat = np.bincount(first * n_codes + c, weights=e - s, minlength=n * n_codes)
    cross = np.flatnonzero(last > first)
    if len(cross):
        pieces = last[cross] - first[cross]
        seg = np.repeat(cross, pieces)
        k = first[seg] + 1 + np.arange(len(seg)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
        part = np.minimum(e[seg], slice_edges[k + 1]) - slice_edges[k]
        flat += np.bincount(k * n_codes + c[seg], weights=part, minlength=n * n_codes)
        flat -= np.bincount(
            first[cross] * n_codes + c[cross],
            weights=e[cross] - slice_edges[first[cross] + 1],
            minlength=n * n_codes,
        )
    return np.rint(flat).astype(np.int64).reshape(n, n_codes)


def _slice_of(slice_edges: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The slice each time of ``t`` (inside the edges) lies in: by division when the
    slices are of one length (as :func:`edges` makes them, the last one maybe shorter),
    else by a search."""
    step = slice_edges[1] - slice_edges[0] if len(slice_edges) > 1 else 0
    inner = slice_edges[:-1]
    if step > 0 and bool(np.all(inner == slice_edges[0] + step * np.arange(len(inner)))):
        return np.minimum((t - slice_edges[0]) // step, len(inner) - 1)
    return iv.last_at_or_before(slice_edges, t)


def dominant(occ: np.ndarray) -> np.ndarray:
    """The cause holding each slice longest (ties: the lower cause, on-GPU first)."""
    return np.argmax(occ, axis=1).astype(np.uint8)


def first_segment(partition: Partition, cause: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For each cell ``i`` (a slice starting at ``starts[i]``), the index of the first
    segment of ``cause[i]`` that ends after the slice's start.

    Every cell's slice must hold some time of its cause (as a cell of
    :func:`occupancy` with time, or :func:`dominant`, guarantees); that segment is then
    the first of its cause inside the slice.
    """
    out = np.empty(len(cause), np.int64)
    for c in np.unique(cause):
        rows = np.flatnonzero(partition.causes == c)
        sl = np.flatnonzero(cause == c)
        k = iv.search(partition.ends[rows], starts[sl], "right")
        out[sl] = rows[k]
    return out
