"""What the default agent mode's records say about the host's CUDA calls (issue 13).

The default mode traces GPU work and synchronisations but no runtime/driver API calls
(they would double the agent's cost on launch-bound code), so rule 3 of
:mod:`gtop.analysis.attribution.partition` would see no launch path and no synchronising call:
launch overhead would read as application work, and a thread waiting in
``cudaStreamSynchronize`` as whatever its state says. For a process with GPU work and no
API records at all, the calls are inferred from what the mode does record, on the
thread that made them:

* **launch marks**: a kernel, copy or memset outside a CUDA graph was launched just
  before it started when the GPU was idle (the queue was empty, or it would not have
  been idle), by a thread of its process that was on-CPU then (the main thread when
  several were). A 1 ns ``LAUNCH`` call at each op's start (inside the op's own
  on-GPU time, so it adds no host time), on that thread and with the op's correlation
  id, stands for that launch: the gap before the op is charged to that thread, and its
  on-CPU time between two such marks closer than the launch gap (100 µs) is the launch
  path, ``H:CTRL``, as it is with API records. Graph nodes are not launched one by one
  and get no mark.
* **synchronising calls**: each CUPTI SYNCHRONIZATION record (stream, event or context
  synchronise; ``.item()`` and ``.cpu()`` end in one) becomes a ``SYNC`` call over its
  span, on the thread the host tier saw waiting in a CUDA call then (else the main
  one): ``H:WAIT_GPU``.
* **graph submits**: a graph node's submit time is at the latest the start of the node
  before it on its stream in the same graph (a replay submits all its nodes at once),
  so the GPU's gaps inside a replay are ``G:QUEUE``, not the host's.

It costs the target nothing: no extra CUPTI kind, only this arithmetic in gtop.
"""

from __future__ import annotations

import numpy as np

from gtop.analysis import compiled
from gtop.analysis import intervals as iv
from gtop.analysis.attribution.records import API, STREAM_WAIT_EVENT
from gtop.core.layouts import ApiClass, BlockReason, ThreadState
from gtop.core.rows import concat_rows, take_rows

MARK_NS = 1
"""Length of a synthetic launch mark (a call must be non-empty to bound a launch gap)."""
BEFORE_NS = 1
"""How long before an op's start its launching thread is looked for on-CPU."""


def api_less(ops: np.ndarray, apis: np.ndarray) -> np.ndarray:
    """Per op: whether its process has no API record at all (traced in default mode)."""
    if not len(ops):
        return np.zeros(0, bool)
    return ~np.isin(ops["pid"], iv.unique_sorted(apis["pid"].astype(np.int64)))


def thread_in(pids: np.ndarray, at: np.ndarray, states: np.ndarray) -> np.ndarray:
    """Per time ``at[i]``: a thread of process ``pids[i]`` with a row of ``states`` over
    it, the main thread (tid == pid) first, else the one with the smallest tid; the main
    thread when none has (or there is no host data)."""
    out = pids.astype(np.int32).copy()
    main = set(iv.unique_sorted(pids.astype(np.int64)).tolist())
    threads = []
    order = iv.group_order(states["tid"])  # each thread's rows, in their order
    for a, b in iv.runs(states["tid"][order]):
        mine = take_rows(states, order[a:b])
        spans = iv.union(mine["t"], mine["end"])
        threads.append((int(mine["tid"][0]), int(mine["pid"][0]), spans.starts, spans.ends))
    threads.sort(key=lambda k: (k[0] not in main, k[0]))
    if not compiled.thread_in(pids, at, threads, out):
        thread_in_reference(pids, at, threads, out)
    return out


def thread_in_reference(
    pids: np.ndarray,
    at: np.ndarray,
    threads: list[tuple[int, int, np.ndarray, np.ndarray]],
    out: np.ndarray,
) -> None:
    """:func:`thread_in`'s search in numpy (what :func:`compiled.thread_in
    <gtop.analysis.compiled.thread_in>` does in C): ``threads`` are (tid, pid, starts and
    ends of its normal spans) in the order tried; ``out[i]`` becomes the tid of the
    first of those of process ``pids[i]`` that holds ``at[i]``, where one does."""
    found = np.zeros(len(at), bool)
    for tid, pid, starts, ends in threads:
        todo = np.flatnonzero(~found & (pids == pid))
        if not len(todo):
            continue
        inside = iv.owner_reference(iv.Spans(starts, ends), at[todo]) >= 0
        out[todo[inside]] = tid
        found[todo[inside]] = True


def launch_marks(ops: np.ndarray, launched: np.ndarray, states: np.ndarray) -> np.ndarray:
    """The launch marks (:data:`~gtop.analysis.attribution.records.API` rows) of the ops in
    ``launched``, in op order: each with the op's correlation id, on the thread of its
    process on-CPU just before it started (the one that launched it)."""
    got = compiled.launch_marks(ops, launched, API, MARK_NS, BEFORE_NS, ApiClass.LAUNCH)
    marks, pids, at = launch_rows_reference(ops, launched) if got is None else got
    on_cpu = states[states["state"] == ThreadState.ON_CPU]
    marks["tid"] = thread_in(pids, at, on_cpu)
    return marks


def launch_rows_reference(
    ops: np.ndarray, launched: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The launch marks of :func:`launch_marks` before their threads are found (tid 0),
    with each one's pid and the time its thread is looked for; in numpy (what
    :func:`compiled.launch_marks <gtop.analysis.compiled.launch_marks>` does in C)."""
    rows = np.flatnonzero(launched)
    marks = np.zeros(len(rows), API)
    for name, source in compiled.project(ops, marks, _MARKED, rows):  # in C where it loads
        marks[name] = ops[source][rows]
    marks["end"] = marks["t"] + MARK_NS
    marks["cls"] = ApiClass.LAUNCH
    return marks, marks["pid"], marks["t"] - BEFORE_NS


_MARKED = [("t", "t"), ("pid", "pid"), ("corr", "corr")]
"""A launch mark's fields taken from its op."""


def inferred_calls(
    ops: np.ndarray, syncs: np.ndarray, states: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """The API rows (:data:`~gtop.analysis.attribution.records.API`) inferred for the ops in
    ``mask``: a launch mark per op outside a graph (:func:`launch_marks`), then a
    ``SYNC`` call per synchronisation of their processes (on the thread the host tier saw
    in a CUDA wait then, else the main one; stream-wait-event records are GPU-side and
    make none)."""
    marks = launch_marks(ops, mask & (ops["graph"] == 0), states)
    pids = iv.unique_sorted(ops["pid"][mask].astype(np.int64))
    waits = syncs[np.isin(syncs["pid"], pids) & (syncs["type"] != STREAM_WAIT_EVENT)]
    calls = np.zeros(len(waits), API)
    calls["t"], calls["end"] = waits["t"], np.maximum(waits["end"], waits["t"] + 1)
    calls["pid"] = waits["pid"]
    middle = waits["t"] + (calls["end"] - calls["t"]) // 2
    calls["tid"] = thread_in(waits["pid"], middle, states[states["reason"] == BlockReason.GPU_WAIT])
    calls["cls"] = ApiClass.SYNC
    return concat_rows([marks, calls])


def own_calls(
    ops: np.ndarray, mask: np.ndarray, calls: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """What joining the ops of ``mask`` with ``calls`` (:func:`inferred_calls` of the
    same ops) by pid and correlation id gives, when it needs no search: no two of those
    ops share a non-zero (pid, correlation), so each launch mark's key names its own op
    alone, and an op in a graph or with a zero id has no call. Returns ``(rows, end,
    tid)``: the ops that have a call, and its end and thread; None when some key repeats
    (the general join decides)."""
    corr = ops["corr"][mask]
    key = (ops["pid"][mask].astype(np.int64) << 32) | corr.astype(np.int64)
    key = key[corr != 0]
    increasing = bool(np.all(key[1:] > key[:-1]))  # ids in launch order: distinct, no sort
    if not increasing and len(iv.unique_sorted(key)) < len(key):
        return None
    launched = mask & (ops["graph"] == 0)
    own = launched & (ops["corr"] != 0)
    marks = calls[: int(launched.sum())]  # inferred_calls puts them first, in op order
    pick = own[launched]
    return np.flatnonzero(own), marks["end"][pick], marks["tid"][pick]


def graph_submits(ops: np.ndarray, start: np.ndarray, stream_index: np.ndarray) -> np.ndarray:
    """Per op: the start of the op before it on its stream when both are nodes of the
    same CUDA graph (its submit time at the latest), else -1. ``stream_index``: a
    dense index per (pid, device, stream)."""
    out = np.full(len(ops), -1, np.int64)
    if not len(ops):
        return out
    order = np.lexsort((start, stream_index))
    graph = ops["graph"][order]
    same = (stream_index[order][1:] == stream_index[order][:-1]) & (graph[1:] == graph[:-1])
    same &= graph[1:] != 0
    out[order[1:][same]] = start[order][:-1][same]
    return out
