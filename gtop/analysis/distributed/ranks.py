"""The ranks of a distributed job side by side: each rank's time in collectives, the
part of it spent waiting for a slower rank (straggler wait), its on-GPU time split into
compute, communication (G:COMM) and copies, and how much of its communication overlapped
its compute.

A rank's collectives come from the GPU when it ran communication kernels, else from its
host threads (:mod:`gtop.analysis.distributed.collectives`). Collectives are matched across ranks by
overlap; in each, a rank waits from its own entry until the last rank entered. The
slowest rank is the one that entered last most often; it is named when some rank's
straggler wait reaches :data:`MIN_WAIT_SHARE` of the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import untraced
from gtop.analysis.attribution.records import OP_COMM, OP_KERNEL, OP_MEMCPY, OP_MEMSET, Records
from gtop.analysis.distributed.collectives import calls, collective_rows, comm_name, match
from gtop.analysis.distributed.roles import ranks as rank_pids
from gtop.core.layouts import ThreadState

MIN_WAIT_SHARE = 0.01
BRIDGE_NS = 1_000_000
"""Collective time of one rank less than this apart is one call (a call that blocks,
runs briefly and blocks again; buckets all-reduced back to back)."""
NS = 1e-9


@dataclass(frozen=True)
class Job:
    """What the analysis reads of a session or a recording."""

    processes: Mapping[int, Mapping[str, Any]]
    """``process`` entity values by pid (with ``host`` where known)."""
    records: Records
    """Ops (communication kernels marked: :func:`gtop.analysis.attribution.records.mark_comm`) and
    host thread states."""
    stacks: Mapping[int, Mapping[str, Any]]
    """``stack`` entity values (``frames``, ``kinds``) by stack id."""
    kernel_names: Mapping[int, str]


def _spans(rows: np.ndarray, t0: int, t1: int) -> iv.Spans:
    return iv.clip(iv.union(rows["t"], rows["end"]), t0, t1)


def _gpu_parts(ops: np.ndarray, t0: int, t1: int) -> tuple[iv.Spans, iv.Spans, iv.Spans, iv.Spans]:
    """One rank's compute spans, communication kernels' spans, and the communication and
    copy spans as attributed (compute hides the others, communication hides copies)."""
    comp = _spans(ops[ops["kind"] == OP_KERNEL], t0, t1)
    talk = _spans(ops[ops["kind"] == OP_COMM], t0, t1)
    copies = ops[(ops["kind"] == OP_MEMCPY) | (ops["kind"] == OP_MEMSET)]
    xfer = iv.subtract(iv.subtract(_spans(copies, t0, t1), comp), talk)
    return comp, talk, iv.subtract(talk, comp), xfer


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
        out[name] = iv.clipped_total(rows["t"][sel], rows["end"][sel], t0, t1) * NS
    return out


def _per_rank(job: Job, t0: int, t1: int) -> list[tuple[dict[str, Any], iv.Spans]]:
    """Each rank's entry (without its straggler wait) and its collective calls."""
    processes = job.processes
    by_rank = rank_pids(processes)
    states, ops = job.records.states, job.records.ops
    off = untraced.spans_by_pid(job.records.untraced, t1)
    coll_mask = collective_rows(states, job.stacks, set(by_rank.values())) if len(states) else None
    out = []
    for rank in sorted(by_rank):
        pid = by_rank[rank]
        entry: dict[str, Any] = {"rank": rank, "pid": pid, "host": processes[pid].get("host")}
        mine = ops[ops["pid"] == pid]
        comp, comm, comm_on, xfer = _gpu_parts(mine, t0, t1)
        host_coll = iv.EMPTY
        if coll_mask is not None:
            host_coll = _spans(states[coll_mask & (states["pid"] == pid)], t0, t1)
            entry["main_thread"] = _host_parts(states, coll_mask, pid, t0, t1)
        on = comp.measure() + comm_on.measure() + xfer.measure()
        traced = t1 - t0 - iv.clip(off.get(pid, iv.EMPTY), t0, t1).measure()
        entry["gar"] = on / traced if len(mine) and traced > 0 else None  # of traced time
        entry["on"] = {"G:COMP": comp.measure() * NS, "G:COMM": comm_on.measure() * NS,
                       "G:XFER": xfer.measure() * NS}  # fmt: skip
        labels = np.unique(mine["label"][mine["kind"] == OP_COMM]).tolist()
        entry["collectives"] = sorted(
            {comm_name(job.kernel_names.get(int(n), "")) or "?" for n in labels}
        )
        coll = comm if len(comm) else host_coll
        entry["collective_source"] = "gpu" if len(comm) else "host"
        entry["collective_s"] = coll.measure() * NS
        hidden = iv.intersect(comm, comp)
        entry["overlap"] = hidden.measure() / comm.measure() if len(comm) else None
        entry["_comm"] = (comm, hidden)
        out.append((entry, calls(coll, BRIDGE_NS)))
    return out


def rank_calls(job: Job, t0: int, t1: int) -> dict[int, iv.Spans]:
    """The collective calls of each rank in ``[t0, t1)`` (one rank is enough)."""
    return {e["rank"]: c for e, c in _per_rank(job, t0, t1)}


def analyse(job: Job, t0: int, t1: int) -> dict[str, Any] | None:
    """The ranks of the job over ``[t0, t1)``, or None when it has fewer than two."""
    if t1 <= t0:
        return None
    ranks = _per_rank(job, t0, t1)
    if len(ranks) < 2:
        return None
    found = match([c for _, c in ranks])
    entries = [e for e, _ in ranks]
    for r, e in enumerate(entries):
        comm, hidden = e.pop("_comm")
        e["overlap_per_step"] = (
            _quantiles(step_overlap(comm, hidden, found.ends[:, r])) if len(comm) else None
        )
    return _straggler(entries, found, t1 - t0)


def measure_before(spans: iv.Spans, points: np.ndarray) -> np.ndarray:
    """For each point, the length of ``spans`` before it."""
    if not len(spans):
        return np.zeros(len(points), np.int64)
    lengths = np.concatenate(([0], np.cumsum(spans.ends - spans.starts)))
    k = np.searchsorted(spans.starts, points, side="right")  # spans starting before
    inside = np.clip(points - spans.starts[np.maximum(k - 1, 0)], 0, None)
    last = np.where(k > 0, np.minimum(inside, (spans.ends - spans.starts)[np.maximum(k - 1, 0)]), 0)
    return lengths[np.maximum(k - 1, 0)] * (k > 0) + last


def step_overlap(comm: iv.Spans, hidden: iv.Spans, ends: np.ndarray) -> np.ndarray:
    """Per step (from one collective's end to the next one's), the share of the rank's
    communication time that overlapped its compute (``hidden``); NaN for a step without
    communication."""
    bounds = np.sort(ends)
    talk = np.diff(measure_before(comm, bounds))
    covered = np.diff(measure_before(hidden, bounds))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(talk > 0, covered / talk, np.nan)


def _quantiles(shares: np.ndarray) -> dict[str, float] | None:
    """Median and worst step of a per-step share (None without steps)."""
    shares = shares[~np.isnan(shares)]
    if not len(shares):
        return None
    return {"steps": len(shares), "median": float(np.median(shares)), "min": float(shares.min())}


def comm_labels(kernel_names: Mapping[int, str]) -> np.ndarray:
    """The name ids of communication kernels, for :func:`mark_comm`."""
    return np.array([i for i, n in kernel_names.items() if comm_name(n)], np.int64)


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
