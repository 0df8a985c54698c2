"""Which host-thread intervals and GPU kernels of a rank are collective communication,
and the collective calls they make up, matched across ranks.

Host side: a thread's blocked interval is in a collective when its *place* is a
collective place. A place is the thread's kind (main thread or not), block reason and
native/kernel frames; it is a collective place when, over the intervals at it that have
Python frames, on any rank of the job, more time was inside a torch.distributed
collective (:data:`COLLECTIVES`) than outside. Python frames come from sampling: a short
wait often has none, and a sample placed a few ms off lends its frames to a neighbour
(seen on a loaded 2-core VM); the vote takes every interval at the place, framed or not,
by what most of its framed time says. Ranks run one program, so they wait in the same
places. Runnable and on-CPU intervals count only next to such a wait
(:func:`_call_edges`): their places (preempted anywhere) say nothing. GPU side: NCCL
kernels (:func:`comm_name`).

A call is a run of collective time of one rank (short gaps bridged). Calls of different
ranks that overlap and end nearest to each other are one collective (:func:`match`); a
rank's straggler wait in it is how long after it entered the last rank entered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from gtop.analysis import intervals as iv
from gtop.core.layouts import ThreadState

COLLECTIVES = frozenset(
    {
        "all_reduce",
        "all_gather",
        "all_gather_into_tensor",
        "all_gather_object",
        "reduce_scatter",
        "reduce_scatter_tensor",
        "all_to_all",
        "all_to_all_single",
        "broadcast",
        "broadcast_object_list",
        "reduce",
        "gather",
        "scatter",
        "barrier",
        "monitored_barrier",
        "send",
        "recv",
    }
)
"""Functions of ``torch/distributed/distributed_c10d.py`` that block in a collective."""
_C10D_FRAME = re.compile(r"^(\w+) \((?:torch/distributed/)?distributed_c10d\.py(?::\d+)?\)$")
"""A frame of torch.distributed's collectives module: py-spy's dumps name the file
``torch/distributed/distributed_c10d.py``, its streamed samples only the file name."""
_NCCL = re.compile(r"nccl(?:Dev)?Kernel_([A-Za-z]+)")
ENTRY_NS = 300_000
"""On-CPU time from calling a collective to blocking in it (measured here with gloo:
0.1-0.2 ms)."""


def comm_name(kernel_name: str) -> str | None:
    """The collective an NCCL kernel runs (``AllReduce``, ``SendRecv``…), or None when
    ``kernel_name`` is not an NCCL kernel (``ncclDevKernel_*``, ``ncclKernel_*``)."""
    m = _NCCL.search(kernel_name)
    return m.group(1) if m else None


def in_collective(frames: list[str]) -> bool:
    """Whether Python ``frames`` (``name (file)`` strings) are inside a collective."""
    return any((m := _C10D_FRAME.match(f)) and m.group(1) in COLLECTIVES for f in frames)


def _native_place(stack: Mapping[str, Any]) -> tuple[str, ...]:
    kinds = stack.get("kinds") or ""
    frames = stack.get("frames") or []
    return tuple(f for f, k in zip(frames, kinds, strict=False) if k != "p")


def _has_python(stack: Mapping[str, Any]) -> bool:
    return "p" in (stack.get("kinds") or "")


def collective_rows(
    rows: np.ndarray, stacks: Mapping[int, Mapping[str, Any]], pids: set[int]
) -> np.ndarray:
    """Mask of the host-thread ``rows`` (:data:`gtop.analysis.attribution.records.STATE`) of
    ``pids``
    that are inside a collective: the rows at a collective place (module docstring),
    and the rows around them that are still in the call (:func:`_call_edges`)."""
    wanted = np.isin(rows["pid"], list(pids))
    sid = rows["stack_id"].astype(np.int64)
    known = wanted & (sid >= 0) & (rows["state"] == ThreadState.BLOCKED)
    ids, inverse = np.unique(sid[known], return_inverse=True)
    main = (rows["tid"] == rows["pid"])[known]
    keys = [
        (bool(m), int(reason), _native_place(stacks.get(int(ids[i]), {})))
        for m, reason, i in zip(main, rows["reason"][known], inverse)
    ]
    labelled = np.array([_has_python(stacks.get(int(s), {})) for s in ids], dtype=bool)[inverse]
    inside = np.array(
        [in_collective(stacks.get(int(s), {}).get("frames") or []) for s in ids], dtype=bool
    )[inverse]
    length = (rows["end"] - rows["t"])[known]
    votes: dict[tuple, int] = {}
    for key, lab, ins, n in zip(keys, labelled, inside, length.tolist()):
        if lab and key[2]:
            votes[key] = votes.get(key, 0) + (n if ins else -n)
    places = {k for k, v in votes.items() if v > 0}
    mask = np.zeros(len(rows), dtype=bool)
    mask[np.flatnonzero(known)] = [k in places for k in keys]
    return mask | _call_edges(rows, mask)


def _call_edges(rows: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows next to a thread's collective rows that are still inside the call.

    After: a runnable row that starts where a collective row ends (woken inside the
    call, waiting for a core to return from it). Before: the on-CPU rows (less than
    :data:`ENTRY_NS` of them in all: entering the call) and the runnable rows the thread
    was preempted into (each follows an on-CPU row) that lead without a gap into a
    collective row: entering a collective wakes the backend's threads, which can take
    the caller's core before it blocks (seen on a loaded 2-core VM: the rank that
    entered first lost about 1 ms per step that way, at worst 20 ms). A runnable row
    after a block (waking from a sleep) is not taken.
    """
    order = np.lexsort((rows["t"], rows["tid"]))
    tid, t, end = rows["tid"][order], rows["t"][order], rows["end"][order]
    state, inside = rows["state"][order], mask[order]
    touch = np.append((tid[:-1] == tid[1:]) & (end[:-1] == t[1:]), False)
    """touch[i]: row i ends where row i + 1 of the same thread starts."""
    out = np.zeros(len(rows), dtype=bool)
    after = np.flatnonzero(inside[:-1] & touch[:-1] & (state[1:] == ThreadState.RUNNABLE)) + 1
    out[order[after]] = True
    on_cpu = state == ThreadState.ON_CPU
    runnable = state == ThreadState.RUNNABLE
    # preempted[i]: row i is in a run of runnable rows that follows an on-CPU row
    lead = np.append(False, touch[:-1])
    first = runnable & ~(np.append(False, runnable[:-1]) & lead)
    run_id = np.cumsum(first)
    entered_from = np.append(False, on_cpu[:-1] & touch[:-1])
    preempted = np.zeros(len(rows), dtype=bool)
    preempted[runnable] = entered_from[np.flatnonzero(first)][run_id[runnable] - 1]
    for head in np.flatnonzero(inside[1:] & ~inside[:-1] & touch[:-1]) + 1:
        i, spent = head - 1, 0
        while i >= 0 and touch[i] and not inside[i] and (on_cpu[i] or preempted[i]):
            spent += int(end[i] - t[i]) if on_cpu[i] else 0
            if spent >= ENTRY_NS:
                break
            out[order[i]] = True
            i -= 1
    return out


def calls(spans: iv.Spans, bridge_ns: int = 0) -> iv.Spans:
    """``spans`` with gaps shorter than ``bridge_ns`` closed: one span per call."""
    if len(spans) < 2 or bridge_ns <= 0:
        return spans
    keep = np.append(spans.starts[1:] - spans.ends[:-1] >= bridge_ns, True)
    heads = np.append(0, np.flatnonzero(keep[:-1]) + 1)
    return iv.Spans(spans.starts[heads], spans.ends[keep])


class Matched(NamedTuple):
    """Collectives found on every rank: ``starts[k, r]``, ``ends[k, r]`` of the k-th
    one on the r-th rank (ranks in the order given)."""

    starts: np.ndarray
    ends: np.ndarray
    unmatched: int
    """Calls of the first rank with no partner on some other rank."""


def partner(a: iv.Spans, b: iv.Spans) -> np.ndarray:
    """For each span of ``a``, the index of the span of ``b`` that overlaps it and ends
    nearest to it, or -1."""
    lo = np.searchsorted(b.ends, a.starts, side="right")
    hi = np.searchsorted(b.starts, a.ends, side="left")
    out = np.full(len(a), -1, np.int64)
    for i in np.flatnonzero(hi > lo):
        j = np.arange(lo[i], hi[i])
        out[i] = j[int(np.argmin(np.abs(b.ends[j] - a.ends[i])))]
    return out


def match(per_rank: list[iv.Spans]) -> Matched:
    """One collective per call of the first rank that has, on every other rank, a
    mutual :func:`partner`: all ranks are inside a collective together at some moment
    and leave it together (within the time the last message takes), while one rank's
    consecutive calls do not overlap."""
    ref = per_rank[0]
    keep = np.ones(len(ref), dtype=bool)
    partners = [np.arange(len(ref))]
    for other in per_rank[1:]:
        there = partner(ref, other)
        back = partner(other, ref)
        keep &= (there >= 0) & (back[np.maximum(there, 0)] == np.arange(len(ref)))
        partners.append(there)
    idx = [p[keep] for p in partners]
    starts = np.stack([c.starts[i] for c, i in zip(per_rank, idx, strict=True)], axis=1)
    ends = np.stack([c.ends[i] for c, i in zip(per_rank, idx, strict=True)], axis=1)
    return Matched(starts, ends, int((~keep).sum()))
