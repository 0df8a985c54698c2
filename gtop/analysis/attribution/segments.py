"""Rules 1 and 2 of :mod:`gtop.analysis.attribution.partition` over one unit's ops, and
rule 3's choice of a thread per gap: the window cut into on-GPU and device-cause runs,
the host's runs between them (:data:`HOST`, for rule 3 to split by what their thread
was doing) and the off-GPU gaps; then the partition assembled from the runs and the
host's pieces.

Each in C where :mod:`gtop.analysis.compiled` loads (one pass), else its numpy
``*_reference``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gtop.analysis import compiled
from gtop.analysis import intervals as iv
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.records import OP_COMM, OP_KERNEL

HOST = np.uint8(255)
"""The cause code of a run left to rule 3 (off-GPU, nothing submitted waiting)."""


class Segments(NamedTuple):
    """A unit's window ``[t0, t1)`` tiled by maximal runs of one cause (sorted)."""

    starts: np.ndarray
    ends: np.ndarray
    causes: np.ndarray
    """uint8: G_COMP, G_COMM, G_XFER, G_QUEUE, G_STALL or :data:`HOST`."""
    gap: np.ndarray
    """int64: the index of the gap (maximal off-GPU run) an off-GPU run lies in, -1 for
    on-GPU ones."""
    host: iv.Spans
    """The :data:`HOST` runs."""
    host_gap: np.ndarray
    """Their gaps."""
    gap_tid: np.ndarray
    """int64, per gap: the submitting thread of its next op (the first starting at or
    after its end), else of its previous op (the latest end at or before its start; of
    equal ends the last in canonical order), else the unit's main thread."""
    gap_kind: np.ndarray
    """int16, per gap: its next op's kind (-1: none)."""
    gap_label: np.ndarray
    """int64, per gap: its next op's label (-1: none)."""


def device_segments(
    ops: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    sub: np.ndarray,
    elig: np.ndarray,
    tid: np.ndarray,
    main: int,
    window: tuple[int, int],
) -> Segments:
    """Rules 1-2 of ``ops`` (:data:`~gtop.analysis.attribution.records.OP`) in canonical
    order (``partition._op_order`` by start, then end), with their starts, ends
    (``>= start``), submit times, eligible times (``sub <= elig <= start``, as rule 2
    makes them) and submitting threads (int32, -1: none)."""
    got = compiled.segments(
        start, end, sub, elig, ops, tid, main, (OP_KERNEL, OP_COMM), window, _CODES
    )
    if got is None:
        return device_segments_reference(ops, start, end, sub, elig, tid, main, window)
    starts, ends, causes, gap, hs, he, hg, gap_tid, gap_kind, gap_label = got
    return Segments(starts, ends, causes, gap, iv.Spans(hs, he), hg, gap_tid, gap_kind, gap_label)


_CODES = np.array(
    [Cause.G_COMP, Cause.G_COMM, Cause.G_XFER, Cause.G_QUEUE, Cause.G_STALL, HOST], np.uint8
)
"""The causes in priority order, as :func:`compiled.segments` takes them."""


def device_segments_reference(
    ops: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    sub: np.ndarray,
    elig: np.ndarray,
    tid: np.ndarray,
    main: int,
    window: tuple[int, int],
) -> Segments:
    """:func:`device_segments` in numpy (set algebra over the interval unions)."""
    t0, t1 = window
    kernel = ops["kind"] == OP_KERNEL
    talk = ops["kind"] == OP_COMM
    copy = ~kernel & ~talk
    comp = iv.clip(iv.union(start[kernel], end[kernel]), t0, t1)
    comm = iv.subtract(iv.clip(iv.union(start[talk], end[talk]), t0, t1), comp)
    xfer = iv.subtract(iv.subtract(iv.clip(iv.union(start[copy], end[copy]), t0, t1), comp), comm)
    on = iv.union(
        np.concatenate((comp.starts, comm.starts, xfer.starts)),
        np.concatenate((comp.ends, comm.ends, xfer.ends)),
    )
    gaps = iv.complement(on, t0, t1)
    queue = iv.intersect(gaps, iv.clip(iv.union(elig, start), t0, t1))
    stall = iv.subtract(iv.intersect(gaps, iv.clip(iv.union(sub, elig), t0, t1)), queue)
    host = iv.subtract(gaps, iv.clip(iv.union(sub, start), t0, t1))

    nxt = iv.last_at_or_before(start, gaps.ends - 1) + 1  # the first starting at or after
    nxt[nxt >= len(ops)] = -1
    # in canonical order, ops of equal ends are in the order partition._op_order(ops, end,
    # start) gives them: a stable sort by end is that order
    by_end = np.argsort(end, kind="stable")
    prv = iv.take(by_end, iv.last_at_or_before(end[by_end], gaps.starts), -1)
    next_tid = iv.take(tid, nxt, -1)
    prev_tid = iv.take(tid, prv, -1)
    gap_tid = np.where(next_tid >= 0, next_tid, np.where(prev_tid >= 0, prev_tid, main))

    parts = [
        (comp, Cause.G_COMP, False),
        (xfer, Cause.G_XFER, False),
        (comm, Cause.G_COMM, False),
        (queue, Cause.G_QUEUE, True),
        (stall, Cause.G_STALL, True),
        (host, HOST, True),
    ]
    starts = np.concatenate([p.starts for p, _, _ in parts])
    order = np.argsort(starts, kind="stable")
    gap = [
        iv.owner(gaps, p.starts) if off else np.full(len(p), -1, np.int64) for p, _, off in parts
    ]
    return Segments(
        starts[order],
        np.concatenate([p.ends for p, _, _ in parts])[order],
        np.concatenate([np.full(len(p), c, np.uint8) for p, c, _ in parts])[order],
        np.concatenate(gap)[order],
        host,
        gap[-1],
        gap_tid.astype(np.int64),
        iv.take(ops["kind"].astype(np.int16), nxt, -1),
        iv.take(ops["label"], nxt, -1).astype(np.int64),
    )


class Pieces(NamedTuple):
    """A unit's host runs split by rule 3, the runs of each charged thread in turn."""

    starts: np.ndarray
    ends: np.ndarray
    causes: np.ndarray
    """uint8 :class:`Cause` codes."""
    run: np.ndarray
    """int64: the index of each piece's run among the host runs (a run's pieces
    consecutive, in time order)."""


def assemble(seg: Segments, pieces: Pieces) -> tuple[np.ndarray, ...]:
    """A unit's partition (``partition.Partition``'s fields: starts, ends, causes,
    charged thread, next op's kind and label) from its segments with each host run
    replaced by its pieces: queue and stall segments charge no thread, on-GPU ones name
    no op."""
    runs = (seg.starts, seg.ends, seg.causes, seg.gap)
    got = compiled.assemble(
        runs, pieces, len(seg.host), _ASSEMBLY, seg.gap_tid, seg.gap_kind, seg.gap_label
    )
    return assemble_reference(seg, pieces) if got is None else got


_ASSEMBLY = np.array([HOST, Cause.G_QUEUE, Cause.G_STALL], np.uint8)
"""The host runs' code, then the causes that charge no thread (:func:`compiled.assemble`)."""


def assemble_reference(seg: Segments, pieces: Pieces) -> tuple[np.ndarray, ...]:
    """:func:`assemble` in numpy: the device's runs and the pieces sorted together."""
    device = seg.causes != HOST
    starts = np.concatenate((seg.starts[device], pieces.starts))
    order = np.argsort(starts, kind="stable")
    starts = starts[order]
    ends = np.concatenate((seg.ends[device], pieces.ends))[order]
    causes = np.concatenate((seg.causes[device], pieces.causes))[order]
    g = np.concatenate((seg.gap[device], seg.host_gap[pieces.run]))[order]
    charged = np.where((causes == Cause.G_QUEUE) | (causes == Cause.G_STALL), -1, g)
    return (
        starts,
        ends,
        causes,
        iv.take(seg.gap_tid, charged, -1).astype(np.int32),
        iv.take(seg.gap_kind, g, -1).astype(np.int16),
        iv.take(seg.gap_label, g, -1).astype(np.int64),
    )
