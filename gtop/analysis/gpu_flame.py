"""The GPU-centric flamegraph: time sliced, one folded stack per slice.

Each slice of ``slice_ns`` becomes one stack whose width is the slice's length, rooted at
the cause that held the slice longest (:func:`gtop.analysis.slices.dominant`):

* ``ON_GPU;G:COMP;<kernel>`` / ``ON_GPU;G:XFER;<copy kind or MEMSET>``: the kernel (copy)
  with the most execution time in the slice;
* ``OFF_GPU;<host cause>;<frames…>``: the CPU stack of the thread charged for the first
  segment of that cause in the slice (off-CPU: the stack it blocked in; on-CPU: its
  latest stack sample in the slice, at most ``max_stack_age_ns`` old);
* ``OFF_GPU;G:QUEUE|G:STALL;<op>``: the op that was waiting.

Output is ``{folded stack: ns}``, the input of every flamegraph renderer and of
``gtop export --format folded``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gtop.analysis import slices
from gtop.analysis.attribution import UnitResult, unit_mask
from gtop.analysis.causes import LABELS, Cause
from gtop.analysis.host import HostIndex, frames_of
from gtop.analysis.records import OP_KERNEL, OP_MEMSET, Records
from gtop.pipeline.layouts import CopyKind

DEVICE_CAUSES = (Cause.G_QUEUE, Cause.G_STALL)


def op_name(kind: int, label: int, kernel_names: Mapping[int, str]) -> str:
    """Display name of an op: kernel name, copy kind, or ``MEMSET``."""
    if kind == OP_KERNEL:
        return kernel_names.get(label, f"kernel#{label}").replace(";", ":")
    if kind == OP_MEMSET:
        return "MEMSET"
    return CopyKind(label).name if label in CopyKind._value2member_map_ else f"copy#{label}"


def _dominant_label(ops: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per slice, the row of ``ops`` with the most execution time in it, as the index of
    its ``(kind, label)`` among ``np.unique`` of those pairs; -1 where no op ran."""
    n = len(edges) - 1
    start = np.maximum(ops["t"], edges[0])
    end = np.minimum(np.maximum(ops["end"], ops["t"]), edges[-1])
    keep = end > start
    start, end, ops = start[keep], end[keep], ops[keep]
    out = np.full(n, -1, np.int64)
    if not len(ops):
        return out
    _, label = np.unique(ops[["kind", "label"]], return_inverse=True)
    first = np.searchsorted(edges, start, side="right") - 1
    last = np.searchsorted(edges, end, side="left") - 1
    count = last - first + 1
    row = np.repeat(np.arange(len(ops)), count)
    sl = first[row] + np.arange(len(row)) - np.repeat(np.cumsum(count) - count, count)
    width = np.minimum(end[row], edges[sl + 1]) - np.maximum(start[row], edges[sl])
    key = sl * (int(label.max()) + 1) + label.reshape(-1)[row]
    ukey, inv = np.unique(key, return_inverse=True)
    total = np.bincount(inv.reshape(-1), weights=width)
    uslice = ukey // (int(label.max()) + 1)
    best = np.lexsort((ukey, -total, uslice))  # per slice: most time, then lowest label
    heads = best[np.r_[True, uslice[best][1:] != uslice[best][:-1]]]
    out[uslice[heads]] = ukey[heads] % (int(label.max()) + 1)
    return out


def fold(
    result: UnitResult,
    records: Records,
    kernel_names: Mapping[int, str] | None = None,
    stacks: Mapping[int, Sequence[str]] | None = None,
    slice_ns: int = 1_000_000,
    max_stack_age_ns: int = 20_000_000,
) -> dict[str, int]:
    """Fold ``result``'s window into ``{stack: ns}`` (see the module docstring).

    ``records`` must be those ``result`` was computed from; ``kernel_names`` maps
    ``name_id`` to a name and ``stacks`` maps ``stack_id`` to frames, outermost first
    (the ``"kernel_name"`` and ``"stack"`` entities).
    """
    kernel_names = kernel_names or {}
    stacks = stacks or {}
    part = result.partition
    edges = slices.edges(result.t0, result.t1, slice_ns)
    width = np.diff(edges)
    cause = slices.dominant(slices.occupancy(part, edges))
    leaf = np.full(len(cause), "", dtype=object)

    ops = records.ops[unit_mask(records.ops, result.unit)]
    for on_cause, is_kernel in ((Cause.G_COMP, True), (Cause.G_XFER, False)):
        mine = ops[(ops["kind"] == OP_KERNEL) == is_kernel]
        label = _dominant_label(mine, edges)
        pairs = np.unique(mine[["kind", "label"]])
        names = np.array(
            [op_name(int(k), int(v), kernel_names) for k, v in pairs] + [""], dtype=object
        )
        sl = cause == on_cause
        leaf[sl] = names[label[sl]]

    off = np.flatnonzero(cause >= Cause.H_CTRL)
    seg = slices.first_segment(part, cause[off], edges[off])
    device = np.isin(cause[off], DEVICE_CAUSES)
    for i, s in zip(off[device], seg[device], strict=True):
        kind = int(part.next_kind[s])
        leaf[i] = op_name(kind, int(part.next_label[s]), kernel_names) if kind >= 0 else ""
    host = HostIndex(records, result.t0, result.t1)
    hs, hseg = off[~device], seg[~device]
    tids = part.tids[hseg]
    for tid in np.unique(tids):
        m = tids == tid
        at = np.maximum(part.starts[hseg[m]], edges[hs[m]])
        until = np.minimum(part.ends[hseg[m]], edges[hs[m] + 1])
        ids = host.stack_ids(int(tid), at, until, max_stack_age_ns)
        cache: dict[int, str] = {}
        for i, sid in zip(hs[m], ids.tolist(), strict=True):
            if sid not in cache:
                cache[sid] = ";".join(frames_of(sid, stacks))
            leaf[i] = cache[sid]

    folded: dict[str, int] = {}
    for c, lf, w in zip(cause.tolist(), leaf.tolist(), width.tolist(), strict=True):
        root = "ON_GPU" if c <= Cause.G_XFER else "OFF_GPU"
        key = f"{root};{LABELS[c]};{lf}" if lf else f"{root};{LABELS[c]}"
        folded[key] = folded.get(key, 0) + w
    return folded
