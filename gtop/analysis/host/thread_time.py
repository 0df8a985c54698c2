"""Per-thread time accounting and stack folding over THREAD_STATE / CPU_SAMPLE records.

Pure functions: record arrays and the stack table (``{stack_id: {"frames", "kinds"}}``) in,
plain data out. Every interval is clipped to the window first, so totals never exceed it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.host.pystack_carry import carry
from gtop.core.layouts import BlockReason, ThreadState
from gtop.core.rows import take_rows
from gtop.core.safe_text import shown

NS = 1e9
Folded = dict[tuple[str, ...], float]
"""Folded stacks: frames (outermost first) to a weight in seconds."""


def clip(intervals: np.ndarray, t0: int | None = None, t1: int | None = None) -> np.ndarray:
    """Intervals cut to ``[t0, t1)``; empty ones dropped. ``None`` means unbounded."""
    start = intervals["t_ns"] if t0 is None else np.maximum(intervals["t_ns"], t0)
    end = intervals["end_ns"] if t1 is None else np.minimum(intervals["end_ns"], t1)
    keep = end > start
    out = take_rows(intervals, keep)  # one copy, of the rows kept only
    out["t_ns"], out["end_ns"] = start[keep], end[keep]
    return out


def _reason_name(reason: int) -> str:
    return BlockReason(int(reason)).name.lower()


def thread_totals(intervals: np.ndarray) -> dict[int, dict]:
    """Per tid: ``pid``, ``on_cpu_s``, ``runnable_s``, ``blocked_s`` ({reason: s})."""
    out: dict[int, dict] = {}
    dur = (intervals["end_ns"] - intervals["t_ns"]) / NS
    for tid in np.unique(intervals["tid"]).tolist():
        sel = intervals["tid"] == tid
        rows, d = intervals[sel], dur[sel]
        blocked: dict[str, float] = defaultdict(float)
        is_blocked = rows["state"] == ThreadState.BLOCKED
        for reason in np.unique(rows["reason"][is_blocked]).tolist():
            blocked[_reason_name(reason)] = float(d[is_blocked & (rows["reason"] == reason)].sum())
        out[tid] = {
            "pid": int(rows["pid"][0]),
            "on_cpu_s": float(d[rows["state"] == ThreadState.ON_CPU].sum()),
            "runnable_s": float(d[rows["state"] == ThreadState.RUNNABLE].sum()),
            "blocked_s": dict(blocked),
        }
    return out


def _frames(stacks: Mapping[int, dict], sid: int) -> tuple[str, ...]:
    entry = stacks.get(int(sid))
    return tuple(entry["frames"]) if entry else ("[no stack]",)


def fold(
    intervals: np.ndarray,
    samples: np.ndarray,
    stacks: Mapping[int, dict],
    *,
    off_cpu: bool = True,
    on_cpu: bool = True,
    prefix: Mapping[int, tuple[str, ...]] | None = None,
) -> Folded:
    """Folded stacks whose widths are time (seconds).

    Off-CPU: each blocked or runnable interval adds its duration under
    ``off-CPU;<reason or runnable>;<stack>``. On-CPU: time inside a GPU call (reason
    ``GPU_WAIT``) goes under ``on-CPU;gpu_wait;<stack>``; the rest of each thread's exact
    on-CPU time is spread evenly over its on-CPU samples, under ``on-CPU;<stack>`` (time
    with no sample goes to ``on-CPU;[no sample]``). ``prefix`` maps a tid to root frames
    (thread label).
    """
    out: Folded = defaultdict(float)
    prefix = prefix or {}
    if off_cpu:
        off = intervals[intervals["state"] != ThreadState.ON_CPU]
        dur = (off["end_ns"] - off["t_ns"]) / NS
        uniq, inverse = iv.unique_columns(
            [off["tid"], off["state"], off["reason"], off["stack_id"]]
        )
        weights = np.bincount(inverse, weights=dur, minlength=len(uniq))
        for (tid, state, reason, sid), w in zip(uniq.tolist(), weights.tolist(), strict=True):
            why = "runnable" if state == ThreadState.RUNNABLE else _reason_name(reason)
            out[(*prefix.get(tid, ()), "off-CPU", why, *_frames(stacks, sid))] += w
    if on_cpu:
        on = intervals[intervals["state"] == ThreadState.ON_CPU]
        # on-CPU time inside a GPU call (a spinning synchronise, uprobe-timed) has its own
        # branch, with the interval's stack; the rest is spread over the samples
        gpu = on[on["reason"] == BlockReason.GPU_WAIT]
        cols = (gpu[f].tolist() for f in ("tid", "stack_id", "t_ns", "end_ns"))
        for tid, sid, t0, t1 in zip(*cols, strict=True):
            key = (*prefix.get(tid, ()), "on-CPU", _reason_name(BlockReason.GPU_WAIT))
            out[(*key, *_frames(stacks, sid))] += (t1 - t0) / NS
        on = on[on["reason"] != BlockReason.GPU_WAIT]
        # by rank, not by raw tid: a recorded tid of 2**31-1 must not size an array
        tids, rank = np.unique(on["tid"], return_inverse=True)
        on_s = np.bincount(rank, weights=(on["end_ns"] - on["t_ns"]) / NS, minlength=len(tids))
        for tid, total in zip(tids.tolist(), on_s.tolist(), strict=True):
            mine = samples[samples["tid"] == tid]
            root = (*prefix.get(tid, ()), "on-CPU")
            if not len(mine):
                out[(*root, "[no sample]")] += total
                continue
            sids, counts = np.unique(mine["stack_id"], return_counts=True)
            for sid, n in zip(sids.tolist(), counts.tolist(), strict=True):
                out[(*root, *_frames(stacks, sid))] += total * n / len(mine)
    return dict(out)


def carry_python(
    intervals: np.ndarray, stacks: Mapping[int, dict]
) -> tuple[np.ndarray, dict[int, dict]]:
    """Python frames for recorded waits that no py-spy dump landed in.

    The collector applies :func:`gtop.analysis.host.pystack_carry.carry` as it records; this is
    the same rule over a recording (those made before it, or re-checked): a blocked or
    runnable interval, or on-CPU time in a GPU call, with no Python frames takes those
    of the nearest interval of the same thread, state and reason whose stack has Python
    frames and the same native leaf and kernel frames. Returns new intervals and the
    stack table extended with the merged stacks (new ids after the largest one).
    """
    stacks = dict(stacks)
    waits = np.flatnonzero(
        (intervals["state"] != ThreadState.ON_CPU) | (intervals["reason"] != BlockReason.NONE)
    )
    w = intervals[waits]
    py_ids: dict[tuple, int] = {}
    tails: dict[tuple, int] = {}
    py = np.full(len(w), -1, np.int64)
    tail = np.empty(len(w), np.int64)
    parts: dict[int, tuple[tuple, tuple]] = {}  # stack id -> (python part, the rest)
    for i, sid in enumerate(w["stack_id"].tolist()):
        if sid not in parts:
            entry = stacks.get(sid) or {"frames": [], "kinds": ""}
            frames, kinds = entry["frames"], entry["kinds"]
            pyf = tuple(f for f, k in zip(frames, kinds, strict=True) if k == "p")
            native = [(f, k) for f, k in zip(frames, kinds, strict=True) if k == "n"][-1:]
            rest = (*native, *((f, k) for f, k in zip(frames, kinds, strict=True) if k == "k"))
            parts[sid] = (pyf, rest)
        pyf, rest = parts[sid]
        tail[i] = tails.setdefault(rest, len(tails))
        if pyf:
            py[i] = py_ids.setdefault(pyf, len(py_ids))
    key = np.stack([w["tid"], w["state"], w["reason"], tail], axis=1).astype(np.int64)
    got = carry(key, w["t_ns"], w["end_ns"], py)
    by_py = {v: k for k, v in py_ids.items()}
    by_tail = {v: k for k, v in tails.items()}
    new_ids: dict[tuple, int] = {}
    next_id = max(stacks, default=-1) + 1
    out = intervals.copy()
    for i in np.flatnonzero((got >= 0) & (py < 0)).tolist():
        merged = (*((f, "p") for f in by_py[int(got[i])]), *by_tail[int(tail[i])])
        sid = new_ids.get(merged)
        if sid is None:
            sid = new_ids[merged] = next_id
            next_id += 1
            stacks[sid] = {"frames": [f for f, _ in merged], "kinds": "".join(k for _, k in merged)}
        out["stack_id"][waits[i]] = sid
    return out, stacks


def folded_text(folded: Folded) -> str:
    """The ``flamegraph.pl`` / speedscope text form, weights in microseconds."""
    lines = [
        f"{';'.join(shown(f).replace(';', ':') for f in k)} {round(w * 1e6)}"
        for k, w in folded.items()
    ]
    return "\n".join(sorted(lines)) + ("\n" if lines else "")


def threads_report(
    intervals: np.ndarray,
    samples: np.ndarray,
    stacks: Mapping[int, dict],
    names: Mapping[int, str] | None = None,
    t0: int | None = None,
    t1: int | None = None,
    top: int = 5,
) -> list[dict]:
    """The ``threads`` section of ``gtop report --json``: one dict per thread id.

    Keys: ``tid``, ``pid``, ``name``, ``on_cpu_s``, ``runnable_s``, ``blocked_s`` (by
    reason), ``top_stacks`` (``off_cpu``: frames, state, seconds; ``on_cpu``: frames,
    seconds), sorted by off-CPU time within each list. Threads sorted by tid.
    """
    rows = clip(intervals, t0, t1)
    if t0 is not None or t1 is not None:
        lo = t0 if t0 is not None else np.iinfo(np.int64).min
        hi = t1 if t1 is not None else np.iinfo(np.int64).max
        samples = samples[(samples["t_ns"] >= lo) & (samples["t_ns"] < hi)]
    out = []
    for tid, totals in sorted(thread_totals(rows).items()):
        folded = fold(rows[rows["tid"] == tid], samples[samples["tid"] == tid], stacks)
        ranked = sorted(folded.items(), key=lambda kv: -kv[1])
        off = [
            {"state": k[1], "frames": list(k[2:]), "seconds": w}
            for k, w in ranked
            if k[0] == "off-CPU"
        ]
        on = [{"frames": list(k[1:]), "seconds": w} for k, w in ranked if k[0] == "on-CPU"]
        out.append(
            {
                "tid": tid,
                "name": (names or {}).get(tid, ""),
                **totals,
                "top_stacks": {"off_cpu": off[:top], "on_cpu": on[:top]},
            }
        )
    return out
