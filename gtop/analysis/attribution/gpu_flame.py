"""The GPU-centric flamegraph: the window's exact time per cause, each cause's time given
a stack slice by slice.

The window is cut into slices of ``slice_ns``; each cause's time in a slice (the
partition's own, :func:`gtop.analysis.attribution.slices.occupancy`) becomes one stack of exactly
that width, so the stacks under a cause add up to the cause's seconds in the report
(:attr:`~gtop.analysis.attribution.partition.Partition.totals`). The leaf names what held that
cause in the slice:

* ``ON_GPU;G:COMP;<kernel>`` / ``ON_GPU;G:XFER;<copy kind or MEMSET>``: the kernel (copy)
  execution with the most time in the slice;
* ``OFF_GPU;<host cause>;<frames…>``: the CPU stack of the thread charged for the first
  segment of that cause in the slice (off-CPU: the stack it blocked in; on-CPU: its
  latest stack sample in the slice, at most ``max_stack_age_ns`` old);
* ``OFF_GPU;G:QUEUE|G:STALL;<op>``: the op that was waiting;
* ``NOT_TRACED``: a kernel-sampling off phase (neither on- nor off-GPU); over a window
  summed block by block, :func:`with_estimates` splits it as the report estimates it
  (``NOT_TRACED;H:CTRL (estimated)``…), so every cause's stacks then add up to the
  report's estimated seconds of that cause.

Output is ``{folded stack: ns}``, the input of every flamegraph renderer and of
``gtop export --format folded``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import slices
from gtop.analysis.attribution.causes import LABELS, OFF_CAUSES, ON_CAUSES, Cause
from gtop.analysis.attribution.host_window import HostIndex, frames_of
from gtop.analysis.attribution.partition import Summary, UnitResult, unit_mask
from gtop.analysis.attribution.records import OP_COMM, OP_KERNEL, OP_MEMCPY, OP_MEMSET, Records
from gtop.core.layouts import CopyKind
from gtop.core.rows import take_rows

DEVICE_CAUSES = (Cause.G_QUEUE, Cause.G_STALL)


def op_name(kind: int, label: int, kernel_names: Mapping[int, str]) -> str:
    """Display name of an op: kernel name, copy kind, or ``MEMSET``."""
    if kind in (OP_KERNEL, OP_COMM):
        return kernel_names.get(label, f"kernel#{label}").replace(";", ":")
    if kind == OP_MEMSET:
        return "MEMSET"
    return CopyKind(label).name if label in CopyKind._value2member_map_ else f"copy#{label}"


def _busiest_op(ops: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per slice, the row of ``ops`` whose execution has the most time in it (ties: the
    earliest start, then the lowest row), or -1 where no op ran."""
    out = np.full(len(edges) - 1, -1, np.int64)
    start = np.maximum(ops["t"], edges[0])
    end = np.minimum(np.maximum(ops["end"], ops["t"]), edges[-1])
    rows = np.flatnonzero(end > start)
    if not len(rows):
        return out
    rows = rows[np.argsort(start[rows], kind="stable")]
    first = np.searchsorted(edges, start[rows], side="right") - 1
    count = np.searchsorted(edges, end[rows], side="left") - first
    rep = np.repeat(np.arange(len(rows)), count)
    sl = first[rep] + np.arange(len(rep)) - np.repeat(np.cumsum(count) - count, count)
    by_slice = np.argsort(sl, kind="stable")
    rep, sl = rep[by_slice], sl[by_slice]
    r = rows[rep]
    width = np.minimum(end[r], edges[sl + 1]) - np.maximum(start[r], edges[sl])
    heads = iv.run_heads(sl)
    best = np.repeat(np.maximum.reduceat(width, heads), np.diff(np.append(heads, len(sl))))
    cand = np.flatnonzero(width == best)
    chosen = cand[iv.run_heads(sl[cand])]
    out[sl[chosen]] = r[chosen]
    return out


def _op_keys(kind: np.ndarray, label: np.ndarray) -> np.ndarray:
    """One int64 per op naming its (kind, label)."""
    return (kind.astype(np.int64) << 48) | (label.astype(np.int64) + 1)


def _op_key_name(key: int, kernel_names: Mapping[int, str]) -> str:
    return op_name(key >> 48, (key & (2**48 - 1)) - 1, kernel_names)


def fold(
    result: UnitResult,
    records: Records,
    kernel_names: Mapping[int, str] | None = None,
    stacks: Mapping[int, Sequence[str]] | None = None,
    slice_ns: int = 1_000_000,
    max_stack_age_ns: int = 20_000_000,
    on_gpu_leaves: bool = True,
) -> dict[str, int]:
    """Fold ``result``'s window into ``{stack: ns}`` (see the module docstring).

    ``records`` must be those ``result`` was computed from; ``kernel_names`` maps
    ``name_id`` to a name and ``stacks`` maps ``stack_id`` to frames, outermost first
    (the ``"kernel_name"`` and ``"stack"`` entities). ``on_gpu_leaves=False`` leaves
    the kernel or copy off ON_GPU stacks (``ON_GPU;G:COMP``), for callers that only
    read the OFF_GPU ones; OFF_GPU stacks are the same either way.
    """
    kernel_names = kernel_names or {}
    stacks = stacks or {}
    part = result.partition
    edges = slices.edges(result.t0, result.t1, slice_ns)
    occ = slices.occupancy(part, edges)
    # One cell per (slice, cause) with time: its width is that cause's ns in the slice.
    # Each cell's leaf is an op key (on-GPU, device causes) or a stack id (host causes);
    # -1 is no leaf. Strings are made once per distinct (cause, leaf), not per cell.
    sl, cause = np.nonzero(occ)
    width = occ[sl, cause]
    cause = cause.astype(np.uint8)
    leaf = np.full(len(cause), -1, np.int64)

    if on_gpu_leaves:
        ops = take_rows(records.ops, unit_mask(records.ops, result.unit))
        keys = _op_keys(ops["kind"], ops["label"])
        on_kinds = (
            (Cause.G_COMP, (OP_KERNEL,)),
            (Cause.G_XFER, (OP_MEMCPY, OP_MEMSET)),
            (Cause.G_COMM, (OP_COMM,)),
        )
        for on_cause, kinds in on_kinds:
            cells = np.flatnonzero(cause == on_cause)
            if not len(cells):
                continue
            mine = np.flatnonzero(np.isin(ops["kind"], kinds))
            row = _busiest_op(take_rows(ops, mine), edges)[sl[cells]]
            leaf[cells] = iv.take(keys[mine], row, -1)

    off = np.flatnonzero(np.isin(cause, OFF_CAUSES))
    seg = slices.first_segment(part, cause[off], edges[sl[off]])
    device = np.isin(cause[off], DEVICE_CAUSES)
    dev_seg = seg[device]
    leaf[off[device]] = np.where(
        part.next_kind[dev_seg] >= 0,
        _op_keys(part.next_kind[dev_seg], part.next_label[dev_seg]),
        -1,
    )
    host = HostIndex(records, result.t0, result.t1)
    hs, hseg = off[~device], seg[~device]
    tids = part.tids[hseg]
    for tid in iv.unique_sorted(tids):
        m = tids == tid
        at = np.maximum(part.starts[hseg[m]], edges[sl[hs[m]]])
        until = np.minimum(part.ends[hseg[m]], edges[sl[hs[m]] + 1])
        leaf[hs[m]] = host.stack_ids(int(tid), at, until, max_stack_age_ns)

    pair = (cause.astype(np.int64) << 56) | (leaf & (2**56 - 1))
    distinct, inverse = iv.dense_index(pair)
    widths = np.bincount(inverse, weights=width).round().astype(np.int64)  # < 2**53: exact
    folded: dict[str, int] = {}
    for key, w in zip(distinct.tolist(), widths.tolist(), strict=True):
        c, lf = key >> 56, key & (2**56 - 1)
        lf = -1 if lf == 2**56 - 1 else lf
        if c in ON_CAUSES or c in DEVICE_CAUSES:
            text = _op_key_name(lf, kernel_names) if lf >= 0 else ""
        else:
            text = ";".join(frames_of(lf, stacks)) if lf >= 0 else ""
        if c == Cause.NOT_TRACED:  # neither on- nor off-GPU: a root of its own
            folded[LABELS[c]] = folded.get(LABELS[c], 0) + w
            continue
        root = "ON_GPU" if c in ON_CAUSES else "OFF_GPU"
        name = f"{root};{LABELS[c]};{text}" if text else f"{root};{LABELS[c]}"
        folded[name] = folded.get(name, 0) + w
    return folded


ESTIMATED = " (estimated)"
"""Suffix of a cause frame under ``NOT_TRACED``: untraced time the report gives that cause."""


def with_estimates(folded: Mapping[str, int], summary: Summary) -> dict[str, int]:
    """``folded`` (``summary``'s window) with its ``NOT_TRACED`` root split into one child
    per cause, ``NOT_TRACED;<cause> (estimated)``, weighing what the report's estimate
    (:attr:`~gtop.analysis.attribution.partition.Summary.estimate`) gives that cause beyond its
    traced time; in whole ns that add up to the root's. Unchanged when nothing was left
    untraced, or nothing traced to estimate from."""
    root = LABELS[Cause.NOT_TRACED]
    untraced = folded.get(root, 0)
    if not untraced or summary.estimate is None or not summary.traced_ns:
        return dict(folded)
    extra = np.maximum(summary.estimate - summary.totals, 0.0)
    extra[Cause.NOT_TRACED] = 0.0
    if not extra.sum():
        return dict(folded)
    # cumulative rounding: whole ns per cause that sum to the root's exactly
    edges = np.rint(np.cumsum(extra) / extra.sum() * untraced).astype(np.int64)
    parts = np.diff(edges, prepend=0)
    out = {k: v for k, v in folded.items() if k != root}
    for c in np.flatnonzero(parts).tolist():
        out[f"{root};{LABELS[c]}{ESTIMATED}"] = int(parts[c])
    return out
