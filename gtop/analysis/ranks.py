"""The ranks of a distributed job side by side: each rank's time in collectives, the
part of it spent waiting for a slower rank (straggler wait), its on-GPU time split into
compute, communication (G:COMM) and copies, and how much of its communication overlapped
its compute.

A rank's collectives come from the GPU when it ran communication kernels, else from its
host threads (:mod:`gtop.analysis.collectives`). Collectives are matched across ranks by
overlap; in each, a rank waits from its own entry until the last rank entered. The
slowest rank is the one that entered last most often; it is named when some rank's
straggler wait reaches :data:`MIN_WAIT_SHARE` of the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.collectives import calls, collective_rows, comm_name, match
from gtop.analysis.roles import ranks as rank_pids
from gtop.core.layouts import ThreadState

MIN_WAIT_SHARE = 0.01
BRIDGE_NS = 1_000_000
"""Collective time of one rank less than this apart is one call (a call that blocks,
runs briefly and blocks again; buckets all-reduced back to back)."""
NS = 1e-9


def _spans(rows: np.ndarray, t0: int, t1: int, end: str = "end_ns") -> iv.Spans:
    return iv.clip(iv.union(rows["t_ns"], rows[end]), t0, t1)


def _gpu_parts(
    pid: int,
    kernels: np.ndarray,
    copies: list[np.ndarray],
    names: Mapping[int, str],
    t0: int,
    t1: int,
) -> tuple[iv.Spans, iv.Spans, iv.Spans, list[str]]:
    """A rank's compute, communication and copy spans, and its collectives' names."""
    k = kernels[kernels["pid"] == pid]
    found = [comm_name(names.get(int(n), "")) for n in k["name_id"]]
    is_comm = np.array([c is not None for c in found], dtype=bool)
    comm = _spans(k[is_comm], t0, t1)
    comp = iv.subtract(_spans(k[~is_comm], t0, t1), comm)
    xfer = iv.EMPTY
    for rows in copies:
        mine = rows[rows["pid"] == pid]
        xfer = iv.union(
            np.concatenate((xfer.starts, mine["t_ns"])), np.concatenate((xfer.ends, mine["end_ns"]))
        )
    xfer = iv.subtract(iv.subtract(iv.clip(xfer, t0, t1), comp), comm)
    return comp, comm, xfer, sorted({c for c in found if c})


def _host_parts(rows: np.ndarray, coll: np.ndarray, pid: int, t0: int, t1: int) -> dict[str, float]:
    """Seconds of the rank's main thread: on-CPU, runnable, in collectives, other waits."""
    main = (rows["pid"] == pid) & (rows["tid"] == pid)
    out = {}
    for name, sel in (
        ("in_collective", main & coll),
        ("on_cpu", main & ~coll & (rows["state"] == ThreadState.ON_CPU)),
        ("runnable", main & ~coll & (rows["state"] == ThreadState.RUNNABLE)),
        ("blocked", main & ~coll & (rows["state"] == ThreadState.BLOCKED)),
    ):
        out[name] = iv.clipped_total(rows["t_ns"][sel], rows["end_ns"][sel], t0, t1) * NS
    return out


def _per_rank(
    processes: Mapping[int, Mapping[str, Any]],
    data: Mapping[str, np.ndarray],
    stacks: Mapping[int, Mapping[str, Any]],
    kernel_names: Mapping[int, str],
    t0: int,
    t1: int,
) -> list[tuple[dict[str, Any], iv.Spans]]:
    """Each rank's entry (without its straggler wait) and its collective calls."""
    by_rank = rank_pids(processes)
    threads = data.get("thread_state")
    kernels = data.get("kernel")
    copies = [data[n] for n in ("memcpy", "memset") if n in data and len(data[n])]
    coll_mask = (
        collective_rows(threads, stacks, set(by_rank.values()))
        if threads is not None and len(threads)
        else None
    )
    out = []
    for rank in sorted(by_rank):
        pid = by_rank[rank]
        entry: dict[str, Any] = {"rank": rank, "pid": pid, "host": processes[pid].get("host")}
        comp = comm = xfer = iv.EMPTY
        names: list[str] = []
        if kernels is not None and len(kernels):
            comp, comm, xfer, names = _gpu_parts(pid, kernels, copies, kernel_names, t0, t1)
        host_coll = iv.EMPTY
        if coll_mask is not None:
            host_coll = _spans(threads[coll_mask & (threads["pid"] == pid)], t0, t1)
            entry["main_thread"] = _host_parts(threads, coll_mask, pid, t0, t1)
        on = comp.measure() + comm.measure() + xfer.measure()
        entry["gar"] = on / (t1 - t0) if (kernels is not None and len(kernels)) else None
        entry["on"] = {"G:COMP": comp.measure() * NS, "G:COMM": comm.measure() * NS,
                       "G:XFER": xfer.measure() * NS}  # fmt: skip
        entry["collectives"] = names
        coll = comm if len(comm) else host_coll
        entry["collective_source"] = "gpu" if len(comm) else "host"
        entry["collective_s"] = coll.measure() * NS
        busy = iv.union(
            np.concatenate((comp.starts, xfer.starts)), np.concatenate((comp.ends, xfer.ends))
        )
        entry["overlap"] = (
            iv.intersect(comm, busy).measure() / comm.measure() if len(comm) else None
        )
        out.append((entry, calls(coll, BRIDGE_NS)))
    return out


def rank_calls(
    processes: Mapping[int, Mapping[str, Any]],
    data: Mapping[str, np.ndarray],
    stacks: Mapping[int, Mapping[str, Any]],
    kernel_names: Mapping[int, str],
    t0: int,
    t1: int,
) -> dict[int, iv.Spans]:
    """The collective calls of each rank in ``[t0, t1)`` (one rank is enough)."""
    return {e["rank"]: c for e, c in _per_rank(processes, data, stacks, kernel_names, t0, t1)}


def analyse(
    processes: Mapping[int, Mapping[str, Any]],
    data: Mapping[str, np.ndarray],
    stacks: Mapping[int, Mapping[str, Any]],
    kernel_names: Mapping[int, str],
    t0: int,
    t1: int,
) -> dict[str, Any] | None:
    """The ranks of the job over ``[t0, t1)``, or None when it has fewer than two.

    Args:
        processes: ``process`` entity values by pid.
        data: ``thread_state``, ``kernel``, ``memcpy``, ``memset`` rows (any missing).
        stacks: ``stack`` entity values (``frames``, ``kinds``) by stack id.
    """
    if t1 <= t0:
        return None
    ranks = _per_rank(processes, data, stacks, kernel_names, t0, t1)
    if len(ranks) < 2:
        return None
    found = match([c for _, c in ranks])
    return _straggler([e for e, _ in ranks], found, t1 - t0)


def _straggler(out: list[dict[str, Any]], found: Any, window: int) -> dict[str, Any]:
    """Each rank's straggler wait over the matched collectives; the slowest rank."""
    late = found.starts.max(axis=1, keepdims=True) - found.starts
    last = np.bincount(found.starts.argmax(axis=1), minlength=len(out)) if len(late) else None
    for r, e in enumerate(out):
        e["straggler_wait_s"] = float(late[:, r].sum()) * NS
        e["straggler_wait_share"] = float(late[:, r].sum()) / window
        e["entered_last"] = int(last[r]) if last is not None else 0
    waiting = max(e["straggler_wait_share"] for e in out)
    slowest = out[int(np.argmax(last))]["rank"] if last is not None else None
    return {
        "window_s": window * NS,
        "collectives": len(late),
        "unmatched_calls": found.unmatched,
        "ranks": out,
        "slowest_rank": slowest if waiting >= MIN_WAIT_SHARE else None,
        "max_wait_share": waiting,
    }
