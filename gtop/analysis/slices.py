"""Fixed time slices over a partition: how long each cause held each slice.

Used by the on/off-GPU ribbon (one cell per slice) and the GPU-centric flamegraph (one
folded stack per slice). Slices start at ``t0``; the last one may be shorter.
"""

from __future__ import annotations

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import Partition
from gtop.analysis.causes import Cause


def edges(t0: int, t1: int, slice_ns: int) -> np.ndarray:
    """Slice boundaries ``[t0, t0 + s, ..., t1]``.

    Raises:
        ValueError: ``slice_ns`` is not positive or the window is empty.
    """
    if slice_ns <= 0 or t1 <= t0:
        raise ValueError("slice_ns must be positive and the window non-empty")
    return np.append(np.arange(t0, t1, slice_ns, dtype=np.int64), np.int64(t1))


def _measure_before(starts: np.ndarray, ends: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Total length of sorted disjoint ``[starts, ends)`` below each point."""
    cum = np.concatenate(([0], np.cumsum(ends - starts)))
    j = np.searchsorted(starts, points, side="right")  # the last interval starting <= point
    out = np.zeros(len(points), np.int64)
    hit = j > 0
    k = j[hit] - 1
    out[hit] = cum[k] + np.minimum(ends[k], points[hit]) - starts[k]
    return out


def occupancy(partition: Partition, slice_edges: np.ndarray) -> np.ndarray:
    """ns of each cause in each slice: shape ``(n_slices, len(Cause))``, int64."""
    return occupancy_of(partition.starts, partition.ends, partition.causes, len(Cause), slice_edges)


def occupancy_of(
    starts: np.ndarray, ends: np.ndarray, codes: np.ndarray, n_codes: int, slice_edges: np.ndarray
) -> np.ndarray:
    """ns of each code in each slice, for sorted disjoint segments ``[starts, ends)``
    labelled with ``codes`` in ``range(n_codes)``: shape ``(n_slices, n_codes)``."""
    out = np.zeros((len(slice_edges) - 1, n_codes), np.int64)
    for code in iv.unique_sorted(codes):
        m = codes == code
        out[:, code] = np.diff(_measure_before(starts[m], ends[m], slice_edges))
    return out


def dominant(occ: np.ndarray) -> np.ndarray:
    """The cause holding each slice longest (ties: the lower cause, on-GPU first)."""
    return np.argmax(occ, axis=1).astype(np.uint8)


def first_segment(partition: Partition, cause: np.ndarray, slice_edges: np.ndarray) -> np.ndarray:
    """Per slice, the index of the first segment of ``cause[i]`` inside slice ``i``.

    Every slice must hold some time of its cause (as :func:`dominant` guarantees).
    """
    out = np.empty(len(cause), np.int64)
    for c in np.unique(cause):
        rows = np.flatnonzero(partition.causes == c)
        sl = np.flatnonzero(cause == c)
        k = np.searchsorted(partition.ends[rows], slice_edges[sl], side="right")
        out[sl] = rows[k]
    return out
