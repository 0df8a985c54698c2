"""Per-thread host data of one window: state intervals, CUDA API calls and stack samples,
indexed by thread id, and the host-cause rule (rule 3 of
:mod:`gtop.analysis.attribution.partition`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from gtop.analysis import compiled
from gtop.analysis import intervals as iv
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.own_cost import marked
from gtop.analysis.attribution.records import Records
from gtop.core.layouts import ApiClass, BlockReason, ThreadState
from gtop.core.rows import take_rows

UNKNOWN_STATE = 255

LAUNCH_GAP_NS = 100_000
"""Default ``launch_gap_ns``: on-CPU time of a thread between two of its consecutive
launch-path API calls (:data:`LAUNCH_PATH`) closer than this is part of the host's
launch path (``H:CTRL``), not application code (``H:APP``). Eager frameworks spend
~5-30 µs of CPU per op between launches (dispatcher, argument checks, Python op
overhead), and a CUDA launch itself takes ~2-5 µs; 100 µs covers that path several
times over while staying far below the application work worth naming (data preparation,
Python loops, logging: milliseconds). At 100 µs per launch the GPU would have to be
fed kernels slower than 10k/s for application code to hide inside this rule."""

LAUNCH_PATH = (ApiClass.LAUNCH, ApiClass.MEMCPY, ApiClass.ALLOC, ApiClass.GRAPH_LAUNCH)
"""API classes whose calls bound a launch gap (see :data:`LAUNCH_GAP_NS`)."""


class Activity(NamedTuple):
    """A thread's pieces of time: state (255: unknown), block reason, and whether it was
    inside a CUDA API call / a synchronising one / a short gap between two launch-path
    calls (:data:`LAUNCH_GAP_NS`)."""

    starts: np.ndarray
    ends: np.ndarray
    state: np.ndarray
    reason: np.ndarray
    in_api: np.ndarray
    in_sync: np.ndarray
    in_launch_gap: np.ndarray
    span: np.ndarray
    """Index of the span (of those asked about) each piece lies in."""


def _by_tid(rows: np.ndarray) -> np.ndarray:
    tid = rows["tid"]
    if len(tid) < 2 or bool(np.all(tid[1:] >= tid[:-1])):
        return rows
    return take_rows(rows, iv.group_order(tid))


def _slice(rows: np.ndarray, tid: int) -> slice:
    a, b = np.searchsorted(rows["tid"], [tid, tid + 1])
    return slice(int(a), int(b))


class HostIndex:
    """Host rows that overlap ``[t0, t1)``, grouped by thread, each group in time order.

    A thread's state records are made disjoint: where two overlap, the earlier one is cut
    where the later one starts (ties ordered by end, state, reason, stack).

    ``launch_gap_ns``: the longest gap between two consecutive launch-path calls of a
    thread that counts as launch path (:data:`LAUNCH_GAP_NS`; 0 turns the rule off).
    Only calls overlapping ``[t0, t1)`` bound a gap, so a gap that crosses a window edge
    is not one.
    """

    def __init__(self, rec: Records, t0: int, t1: int, launch_gap_ns: int = LAUNCH_GAP_NS) -> None:
        self.t0, self.t1 = t0, t1
        self.launch_gap_ns = launch_gap_ns
        states = take_rows(rec.states, (rec.states["end"] > t0) & (rec.states["t"] < t1))
        order = iv.canonical_order(
            [states["t"], states["end"], states["state"], states["reason"], states["stack_id"]]
        )
        states = _by_tid(take_rows(states, order))
        end = states["end"].copy()
        same = states["tid"][1:] == states["tid"][:-1]
        end[:-1][same] = np.minimum(end[:-1][same], states["t"][1:][same])
        keep = end > states["t"]
        self.states, self.state_end = take_rows(states, keep), end[keep]
        self._all_apis = rec.apis
        samples = take_rows(rec.samples, (rec.samples["t"] >= t0) & (rec.samples["t"] < t1))
        self.samples = _by_tid(
            take_rows(samples, iv.canonical_order([samples["t"], samples["stack_id"]]))
        )

    @functools.cached_property
    def apis(self) -> np.ndarray:
        """The API calls that overlap the window, grouped by thread (made when first
        asked: the flamegraph's index never asks)."""
        every, t0, t1 = self._all_apis, self.t0, self.t1
        apis = (every["end"] > t0) & (every["t"] < t1)
        return _by_tid(every if bool(apis.all()) else take_rows(every, apis))

    def thread_states(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """The thread's state records, sorted and disjoint, and their (cut) ends."""
        s = _slice(self.states, tid)
        return self.states[s], self.state_end[s]

    def thread_apis(self, tid: int) -> np.ndarray:
        return self.apis[_slice(self.apis, tid)]

    def thread_samples(self, tid: int) -> np.ndarray:
        return self.samples[_slice(self.samples, tid)]

    def api_sets(self, tid: int, spans: iv.Spans) -> tuple[iv.Spans, iv.Spans, iv.Spans]:
        """The union of the thread's API calls that overlap normal ``spans``, of its
        synchronising ones among them (SYNC, QUERY), and its launch gaps: holes shorter
        than ``launch_gap_ns`` between consecutive pieces of the union of its launch-path
        calls (other calls inside a hole do not break it); in one pass in C where it
        loads."""
        apis = self.thread_apis(tid)
        got = compiled.api_sets(apis, spans, _PATH, _SYNC, self.launch_gap_ns)
        if got is None:
            return api_sets_reference(apis, spans, self.launch_gap_ns)
        return iv.Spans(*got[:2]), iv.Spans(*got[2:4]), iv.Spans(*got[4:])

    def activity(self, tid: int, spans: iv.Spans) -> Activity:
        """What thread ``tid`` was doing over normal ``spans``, in pieces that tile them."""
        states, s_end = _overlapping(*self.thread_states(tid), spans)
        in_api, in_sync, gaps = self.api_sets(tid, spans)
        if not len(spans):
            t, code, flag = np.empty(0, np.int64), np.empty(0, np.uint8), np.empty(0, bool)
            return Activity(t, t, code, code, flag, flag, flag, t)
        pairs = [(sp.starts, sp.ends) for sp in (spans, in_api, in_sync, gaps)]
        got = compiled.activity(pairs, states["t"], s_end)
        p, q, si, flags, span = sweep_reference(pairs, states["t"], s_end) if got is None else got
        return Activity(
            p,
            q,
            iv.take(states["state"], si, UNKNOWN_STATE),
            iv.take(states["reason"], si, BlockReason.NONE),
            flags & 1 > 0,
            flags & 2 > 0,
            flags & 4 > 0,
            span,
        )

    def host_causes(
        self, tid: int, host: iv.Spans
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Split normal spans ``host`` by what thread ``tid`` was doing (rule 3; on-CPU
        outside API calls is ``H:CTRL`` inside a launch gap, else ``H:APP``; on-CPU
        inside an I/O syscall, reason IO, is ``H:IO`` unless in a SYNC/QUERY call).

        Returns:
            ``(starts, ends, causes, span)`` tiling ``host``; ``span``: the index of
            the span of ``host`` each piece lies in.
        """
        a = self.activity(tid, host)
        code = a.state.astype(np.int32) << 11
        code |= a.reason.astype(np.int32) << 3
        code |= a.in_api.astype(np.int32) << 2
        code |= a.in_sync.astype(np.int32) << 1
        code |= a.in_launch_gap
        return a.starts, a.ends, _cause_table()[code], a.span

    def thread_panels(self, tids: np.ndarray) -> tuple[int, int, int]:
        """(blocked, runnable, on-CPU) ns of the threads ``tids`` in the window: blocked
        and runnable as the time at least one of them was (never more than the window),
        on-CPU summed over them (the CPU's service time)."""
        rows = [self.thread_states(int(tid)) for tid in tids]
        states = np.concatenate([r[0]["state"] for r in rows]) if rows else np.empty(0, np.uint8)
        starts = np.concatenate([r[0]["t"] for r in rows]) if rows else np.empty(0, np.int64)
        ends = np.concatenate([r[1] for r in rows]) if rows else np.empty(0, np.int64)
        blocked, runnable, on = (
            states == ThreadState.BLOCKED,
            states == ThreadState.RUNNABLE,
            states == ThreadState.ON_CPU,
        )
        return (
            iv.clipped_measure(starts[blocked], ends[blocked], self.t0, self.t1),
            iv.clipped_measure(starts[runnable], ends[runnable], self.t0, self.t1),
            iv.clipped_total(starts[on], ends[on], self.t0, self.t1),
        )

    def stack_ids(self, tid: int, at: np.ndarray, until: np.ndarray, max_age: int) -> np.ndarray:
        """The thread's stack id for each probe time ``at`` (-1 when none).

        Off-CPU: the stack recorded with the state it is in at ``at`` (where it blocked).
        On-CPU or unknown: the latest stack sample in ``[at - max_age, until)``, else
        the state's stack.
        """
        states, s_end = self.thread_states(tid)
        si = iv.owner(iv.Spans(states["t"], s_end), at)
        state_stack = iv.take(states["stack_id"], si, -1)
        off_cpu = iv.take(states["state"], si, UNKNOWN_STATE) != ThreadState.ON_CPU
        off_cpu &= si >= 0
        samples = self.thread_samples(tid)
        k = np.searchsorted(samples["t"], until, side="left") - 1
        fresh = k >= 0
        fresh[fresh] = samples["t"][k[fresh]] >= at[fresh] - max_age
        sample_stack = iv.take(samples["stack_id"], np.where(fresh, k, -1), -1)
        return np.where(
            off_cpu & (state_stack >= 0),
            state_stack,
            np.where(sample_stack >= 0, sample_stack, state_stack),
        )


def api_sets_reference(
    apis: np.ndarray, spans: iv.Spans, launch_gap_ns: int
) -> tuple[iv.Spans, iv.Spans, iv.Spans]:
    """:meth:`HostIndex.api_sets` of a thread's API rows, in numpy."""
    path = np.isin(apis["cls"], LAUNCH_PATH)
    calls = iv.union(apis["t"][path], apis["end"][path])
    gaps = iv.EMPTY
    if len(calls) >= 2 and launch_gap_ns > 0:
        s, e = calls.ends[:-1], calls.starts[1:]
        short = e - s < launch_gap_ns
        gaps = iv.Spans(s[short], e[short])
    apis, a_end = _overlapping(apis, apis["end"], spans)
    sync_cls = np.isin(apis["cls"], (ApiClass.SYNC, ApiClass.QUERY))
    in_api = iv.union(apis["t"], a_end)
    in_sync = iv.union(apis["t"][sync_cls], a_end[sync_cls])
    return in_api, in_sync, gaps


_PATH = np.isin(np.arange(256), LAUNCH_PATH)
_SYNC = np.isin(np.arange(256), (ApiClass.SYNC, ApiClass.QUERY))
"""Tables of the API classes bounding a launch gap, and of the synchronising ones."""


def sweep_reference(
    sets: list[tuple[np.ndarray, np.ndarray]], cut_t: np.ndarray, cut_end: np.ndarray
) -> tuple[np.ndarray, ...]:
    """:meth:`HostIndex.activity`'s sweep in numpy (what :func:`compiled.activity
    <gtop.analysis.compiled.activity>` does in C): ``sets`` are four normal sets as
    (starts, ends), the spans (not empty), the API calls, the synchronising calls and the
    launch gaps; ``cut_t``, ``cut_end`` the thread's state records (sorted, disjoint).
    Returns each piece's start, end, state record (-1: none), flags (bit 0: in an API
    call, 1: in a synchronising one, 2: in a launch gap) and span."""
    # One sweep over all endpoints: each normal set adds +1 at its starts and -1 at
    # its ends in its own byte of a packed counter, and the spans' starts also count
    # from bit 32 on (the total after the last event at a time is exact, so fields
    # never mix); state records only cut pieces, and a piece's state is the
    # (disjoint) record over its start.
    times = np.concatenate([x for pair in sets for x in pair] + [cut_t, cut_end])
    times = np.clip(times, sets[0][0][0], sets[0][1][-1])
    packed = np.concatenate(
        [
            np.full(len(starts), sign << (8 * k), np.int64)
            for k, (starts, _) in enumerate(sets)
            for sign in (1, -1)
        ]
        + [np.zeros(2 * len(cut_t), np.int64)]
    )
    packed[: len(sets[0][0])] += np.int64(1) << 32
    order = np.argsort(times, kind="stable")
    times = times[order]
    last = np.append(np.flatnonzero(times[1:] != times[:-1]), len(times) - 1)
    packed = np.cumsum(packed[order])[last[:-1]]
    inside = np.flatnonzero((packed & 0xFF) > 0)
    packed = packed[inside]
    flags = np.zeros(len(packed), np.uint8)
    for bit in range(3):
        flags |= (((packed >> (8 * bit + 8)) & 0xFF > 0) << bit).astype(np.uint8)
    return (
        times[last[inside]],
        times[last[inside + 1]],
        iv.owner_reference(iv.Spans(cut_t, cut_end), times[last[inside]]),
        flags,
        (packed >> 32) - 1,
    )


@functools.cache
def _cause_table() -> np.ndarray:
    """:func:`_host_cause` of every (state, reason, in API call, in sync call, in launch
    gap), indexed by ``state << 11 | reason << 3 | in_api << 2 | in_sync << 1 | gap``:
    a piece's cause is one lookup, not a selection over every piece per rule."""
    code = np.arange(1 << 19)
    return _host_cause(
        (code >> 11).astype(np.uint8),
        ((code >> 3) & 0xFF).astype(np.uint8),
        (code >> 2) & 1 == 1,
        (code >> 1) & 1 == 1,
        code & 1 == 1,
    )


def _host_cause(
    state: np.ndarray,
    reason: np.ndarray,
    in_api: np.ndarray,
    in_sync: np.ndarray,
    in_launch_gap: np.ndarray,
) -> np.ndarray:
    """Rule 3's cause of a piece of a thread's time (see :meth:`HostIndex.host_causes`)."""
    blocked = np.select(
        [reason == BlockReason.IO, reason == BlockReason.GPU_WAIT],
        [Cause.H_IO, Cause.H_WAIT_GPU],
        Cause.OFF_CPU,
    )
    # Collectors mark on-CPU or runnable time spent inside a CUDA synchronising call
    # (uprobes on libcudart/libcuda) with reason GPU_WAIT: spinning in a sync.
    spinning = (state != ThreadState.BLOCKED) & (reason == BlockReason.GPU_WAIT)
    # ... and on-CPU time inside an I/O syscall (the kernel's own work for a read or
    # a write: copying, submitting, completing) with reason IO: I/O, like the time
    # blocked in the same call, in or out of an API call or launch gap.
    in_io = (state == ThreadState.ON_CPU) & (reason == BlockReason.IO)
    return np.select(
        [
            in_sync | spinning,
            state == ThreadState.BLOCKED,
            state == ThreadState.RUNNABLE,
            in_io,
            in_api,
            state == ThreadState.ON_CPU,
        ],
        [
            Cause.H_WAIT_GPU,
            blocked,
            Cause.OFF_CPU,
            Cause.H_IO,
            Cause.H_CTRL,
            np.where(in_launch_gap, Cause.H_CTRL, Cause.H_APP),
        ],
        Cause.UNKNOWN,
    ).astype(np.uint8)


def _overlapping(
    rows: np.ndarray, ends: np.ndarray, spans: iv.Spans
) -> tuple[np.ndarray, np.ndarray]:
    """The rows (and their ends) whose ``[t, end)`` overlaps normal ``spans``."""
    if not len(spans):
        return rows[:0], ends[:0]
    j = iv.last_at_or_before(spans.ends, rows["t"]) + 1
    ok = j < len(spans)
    ok[ok] = spans.starts[j[ok]] < ends[ok]
    return take_rows(rows, ok), ends[ok]


def frames_of(stack_id: int, stacks: Mapping[int, Sequence[str]]) -> list[str]:
    """The frames of a stack, outermost first, made safe for folded-stack text, gtop's
    own frames marked (:func:`gtop.analysis.attribution.own_cost.marked`)."""
    return [marked(f.replace(";", ":").replace("\n", " ")) for f in stacks.get(stack_id, ())]
