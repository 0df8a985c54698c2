"""On-/off-GPU attribution (the gPerf model): a partition of a window, per unit.

A *unit* is a device, a process on a device, or a stream. For a window ``[t0, t1)`` every
nanosecond of every unit gets exactly one cause (:class:`Cause`). The rules, applied in
this order (docs/attribution.md has worked examples):

1. **ON_GPU.** ``G:COMP`` = union of kernel ``[start, end)``; ``G:XFER`` = (union of memcpy
   and memset ``[start, end)``) minus ``G:COMP``: where a kernel and a copy overlap the unit is
   computing and the copy is hidden, so compute takes precedence. Overlaps count once.
2. **Device causes** (off-GPU, but work is waiting). Every op has a *submit* time: its
   CUPTI ``submitted`` stamp when present, else the end of the API call with its
   correlation id (ids repeat: the one that started last at or before the op), else its
   ``queued`` stamp, else its start (clipped to its start).
   Its *eligible* time is the latest of: submit; the end of the stream's previous op
   (streams are in order); and, when a ``cudaStreamWaitEvent`` was issued on its
   stream after the previous op was submitted, the estimate "the latest end of any op
   on the device that ended before it started" for the awaited event. Off-GPU time in
   some op's ``[eligible, start)`` is ``G:QUEUE``; otherwise in some op's
   ``[submit, eligible)`` it is ``G:STALL``.
3. **Host causes** (off-GPU, nothing submitted is waiting: the host is late). Each
   maximal off-GPU *gap* is charged to one host thread: the submitting thread (API
   call with the same pid and correlation id) of the gap's *next op* (first op starting
   at or after the gap's end, ties broken by end, pid, device, stream, correlation);
   else of its *previous op* (latest end at or before the gap's start); else the
   unit's main thread (tid == the smallest pid of the unit). The charged thread's
   state at each instant gives the cause:

   * inside a SYNC or QUERY class API call → ``H:WAIT_GPU`` (blocked or spinning);
   * inside another API call: on-CPU or state unknown → ``H:CTRL``;
   * outside API calls: on-CPU → ``H:APP``, except in a *launch gap* → ``H:CTRL``;
     state unknown → ``UNKNOWN``. A launch gap is a hole shorter than ``launch_gap_ns``
     (default 100 µs, :data:`~gtop.analysis.attribution.host_window.LAUNCH_GAP_NS`) between two
     consecutive launch-path calls (LAUNCH, MEMCPY, ALLOC, GRAPH_LAUNCH) of the thread:
     the framework's per-op dispatch between launches is the host's launch path;
   * anywhere: blocked with reason GPU_WAIT → ``H:WAIT_GPU``, reason IO → ``H:IO``,
     any other reason (locks, sleeps, poll/select waits, ...) or runnable → ``OFF_CPU``;
     on-CPU or runnable with reason GPU_WAIT (spinning or yielding inside a CUDA
     synchronising call, seen by uprobes) → ``H:WAIT_GPU``; on-CPU with reason IO
     (inside an I/O syscall: the kernel's work for a read or write) → ``H:IO``, also
     inside a non-SYNC API call or a launch gap.

   Nested calls (a runtime call around driver calls) count once; overlapping state
   records of one thread are cut where the next one starts. A process traced without
   API records (the default agent mode) gets its launches, synchronising calls and
   graph submits inferred from its ops and CUPTI synchronisation records
   (:mod:`gtop.analysis.attribution.default_mode`).

4. **Not traced.** Inside the unit's untraced spans (kernel sampling's off phases,
   :mod:`gtop.analysis.attribution.untraced`; a device or process unit: the union over the pids of
   its streams) every segment becomes ``NOT_TRACED``, cut at the spans' edges. The
   partition and :attr:`Summary.totals` say exactly that; the shares and GAR are of
   :attr:`Summary.estimate`, where each untraced span takes the cause mix of the traced
   time just before it (:func:`estimated`).

Window edges: every interval is clipped to ``[t0, t1)``. Only records that overlap the
window take part, where an op overlaps through ``[submit, end)``; so a gap at the end
of the window is charged to an op submitted before ``t1`` when there is one. Rules that
pick "the first" record use an explicit total order, so results never depend on the
order in which records arrived.

Panels (resource-wide waits, clipped to the window, summed over the unit's ops and its
*host threads*: the submitting threads of its ops and the threads charged for its
gaps): ``OFF-CPU^dep`` = Σ blocked, ``OFF-CPU^queue`` = Σ runnable, ``OFF-GPU^dep`` =
Σ ``[submit, eligible)``, ``OFF-GPU^queue`` = Σ ``[eligible, start)``. With service
times (Σ on-CPU, Σ op ``[start, end)``), the inflation factors of a resource are
``QIF = (queue wait + service) / service`` and ``DIF = (dependency wait + service) /
service``; NaN when there is no service.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal, NamedTuple

import numpy as np

from gtop.analysis import compiled
from gtop.analysis import intervals as iv
from gtop.analysis.attribution import default_mode, untraced
from gtop.analysis.attribution.causes import PANELS, Cause
from gtop.analysis.attribution.host_window import LAUNCH_GAP_NS, HostIndex
from gtop.analysis.attribution.records import Records
from gtop.analysis.attribution.segments import Pieces, assemble, device_segments
from gtop.core.rows import concat_rows, kept, take_rows

NEVER = np.int64(-(2**62))
"""A time before every real time."""


Level = Literal["device", "process", "stream"]


class Unit(NamedTuple):
    """What is attributed: ``pid``/``stream`` are -1 when the level does not use them."""

    level: str
    device: int
    pid: int = -1
    stream: int = -1


@dataclass(frozen=True)
class Partition:
    """A unit's window as sorted, disjoint segments that tile ``[t0, t1)`` exactly.

    ``tids``: the charged host thread of an off-GPU segment (-1: none, or on-GPU).
    ``next_kind``/``next_label``: the op that ends the segment's gap (-1 when none).
    """

    starts: np.ndarray
    ends: np.ndarray
    causes: np.ndarray
    tids: np.ndarray
    next_kind: np.ndarray
    next_label: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def totals(self) -> np.ndarray:
        """ns per :class:`Cause` (int64, indexed by cause)."""
        out = np.zeros(len(Cause), np.int64)
        np.add.at(out, self.causes, self.ends - self.starts)  # exact int64 sums
        return out


@dataclass(frozen=True, kw_only=True)
class Summary:
    """The numbers of one unit over ``[t0, t1)``, or over consecutive windows summed;
    all times in ns."""

    unit: Unit
    t0: int
    t1: int
    totals: np.ndarray
    """ns per :class:`Cause`; sums to ``t1 - t0``."""
    panels: dict[str, int]
    service: dict[str, int]
    """``"cpu"``: on-CPU ns of the host threads; ``"gpu"``: sum of op execution ns."""
    threads: tuple[int, ...]
    """The unit's host threads (see the module docstring)."""
    exact: bool = True
    """False for :mod:`gtop.analysis.attribution.approximate` results (no CUPTI data)."""
    estimate: np.ndarray | None = None
    """ns per :class:`Cause` with the ``NOT_TRACED`` time given out by :func:`estimated`
    (float; sums to ``t1 - t0`` when anything was traced); None when nothing was left
    untraced (then it is :attr:`totals`)."""

    @property
    def duration_ns(self) -> int:
        return self.t1 - self.t0

    @property
    def traced_ns(self) -> int:
        """The window less its ``NOT_TRACED`` time."""
        return self.duration_ns - int(self.totals[Cause.NOT_TRACED])

    @property
    def estimated(self) -> np.ndarray:
        """ns per cause over the whole window, what shares are of (:attr:`estimate`)."""
        return self.totals.astype(np.float64) if self.estimate is None else self.estimate

    @property
    def gar(self) -> float:
        """GPU Active Ratio, |ON_GPU| / (t1 - t0), with untraced time estimated (NaN when
        nothing was traced)."""
        if not self.traced_ns:
            return float("nan")
        on = float(sum(self.estimated[c] for c in (Cause.G_COMP, Cause.G_XFER, Cause.G_COMM)))
        return on / self.duration_ns

    def inflation(self) -> dict[str, dict[str, float]]:
        """QIF and DIF of the ``"cpu"`` and ``"gpu"`` resources."""
        waits = {
            "cpu": (self.panels["OFF-CPU^queue"], self.panels["OFF-CPU^dep"]),
            "gpu": (self.panels["OFF-GPU^queue"], self.panels["OFF-GPU^dep"]),
        }
        out = {}
        for res, (queue, dep) in waits.items():
            s = self.service[res]
            out[res] = {
                "qif": (queue + s) / s if s else float("nan"),
                "dif": (dep + s) / s if s else float("nan"),
            }
        return out

    def plus(self, later: Summary) -> Summary:
        """This window and the next one (``later.t0 == self.t1``) of the same unit.

        Raises:
            ValueError: the windows are not consecutive or the units differ.
        """
        if later.t0 != self.t1 or later.unit != self.unit:
            raise ValueError("only consecutive windows of one unit can be summed")
        return Summary(
            unit=self.unit,
            t0=self.t0,
            t1=later.t1,
            totals=self.totals + later.totals,
            panels={k: v + later.panels[k] for k, v in self.panels.items()},
            service={k: v + later.service[k] for k, v in self.service.items()},
            threads=tuple(sorted(set(self.threads) | set(later.threads))),
            exact=self.exact and later.exact,
            estimate=None if self.estimate is None and later.estimate is None else self._and(later),
        )

    def _and(self, later: Summary) -> np.ndarray:
        """The two windows' estimates summed; one that traced nothing (a block wholly
        inside an off phase, as a report's last block can be) takes the other's mix."""
        mine, theirs = self.estimated, later.estimated
        if self.traced_ns and not later.traced_ns:
            theirs = mine * (later.duration_ns / mine.sum())
        elif later.traced_ns and not self.traced_ns:
            mine = theirs * (self.duration_ns / theirs.sum())
        return mine + theirs

    def summary(self) -> Summary:
        """Just the numbers (drops what a subclass adds, e.g. the partition)."""
        return Summary(**{f.name: getattr(self, f.name) for f in fields(Summary)})


@dataclass(frozen=True, kw_only=True)
class UnitResult(Summary):
    """:class:`Summary` of one window, with the partition it was summed from."""

    partition: Partition


def stream_keys(ops: np.ndarray) -> np.ndarray:
    """One int64 per op naming its (pid, device, stream); devices must be < 256."""
    got = compiled.stream_keys(ops)
    return stream_keys_reference(ops) if got is None else got


def stream_keys_reference(ops: np.ndarray) -> np.ndarray:
    """:func:`stream_keys` in numpy."""
    key = ops["pid"].astype(np.int64)  # built in place: no temporary per operator
    key <<= 8
    key |= ops["device"] & 0xFF
    key <<= 32
    key |= ops["stream"]
    return key


def _unit_of(key: int, level: str) -> Unit:
    pid, device, stream = key >> 40, (key >> 32) & 0xFF, key & 0xFFFFFFFF
    return Unit(
        level,
        device,
        pid if level != "device" else -1,
        stream if level == "stream" else -1,
    )


def attribute(
    records: Records,
    t0: int,
    t1: int,
    level: Level = "device",
    known: np.ndarray | None = None,
    launch_gap_ns: int = LAUNCH_GAP_NS,
) -> dict[Unit, UnitResult]:
    """Attribute ``[t0, t1)`` for every unit of ``level`` with ops in the window.

    ``known`` (:func:`stream_keys` of streams seen before) adds the units they belong
    to: one without ops in the window is off-GPU throughout, charged to its main thread.
    ``launch_gap_ns``: see rule 3 (0 turns launch gaps off).

    Raises:
        ValueError: ``t1 <= t0`` or an unknown level.
    """
    if t1 <= t0:
        raise ValueError("empty window")
    if level not in ("device", "process", "stream"):
        raise ValueError(f"unknown level {level!r}")
    prep = _Prepared(records, t0, t1, launch_gap_ns)
    streams = prep.keys
    everything = np.concatenate((streams, known if known is not None else streams[:0]))
    units: dict[Unit, int] = {}
    pids: dict[Unit, list[int]] = {}
    for key in iv.unique_sorted(everything).tolist():  # ascending pid: the first is main
        unit = _unit_of(key, level)
        units.setdefault(unit, key >> 40)
        pids.setdefault(unit, []).append(key >> 40)
    off = untraced.spans_by_pid(records.untraced, t1)
    mask = {
        "device": np.int64(0xFF << 32),
        "process": np.int64(~0xFFFFFFFF),
        "stream": np.int64(-1),
    }[level]
    op_unit = streams & mask
    order = iv.group_order(op_unit)  # keeps the canonical op order in each unit
    rows = {_unit_of(int(op_unit[order[a]]), level): order[a:b] for a, b in iv.runs(op_unit[order])}
    empty = np.empty(0, np.int64)
    return {
        unit: _attribute_unit(
            prep, unit, rows.get(unit, empty), main, untraced.union_over(off, pids[unit])
        )
        for unit, main in sorted(units.items())
    }


def unit_mask(ops: np.ndarray, unit: Unit) -> np.ndarray:
    """Which rows of an ops table (:data:`~gtop.analysis.attribution.records.OP`) belong to
    ``unit``."""
    mask = ops["device"] == unit.device
    if unit.pid >= 0:
        mask &= ops["pid"] == unit.pid
    if unit.stream >= 0:
        mask &= ops["stream"] == unit.stream
    return mask


def _stream_index(ops: np.ndarray, keys: np.ndarray | None = None) -> np.ndarray:
    """A dense int64 index per op's (pid, device, stream) (``keys``: their
    :func:`stream_keys`, when made already)."""
    if not len(ops):
        return np.zeros(0, np.int64)
    pid, device = ops["pid"], ops["device"]
    if pid.min() >= 0 and pid.max() < 1 << 23 and device.min() >= 0 and device.max() < 256:
        # stream_keys order (pid, device, stream) as the general way does: a search of
        # the few distinct keys instead of two sorts of every op
        keys = stream_keys(ops) if keys is None else keys
        return np.searchsorted(iv.unique_sorted(keys), keys).astype(np.int64)
    pd = (ops["pid"].astype(np.int64) << 16) | ops["device"].astype(np.int64)
    _, pd_index = iv.dense_index(pd)
    skey = (pd_index.astype(np.int64) << 32) | ops["stream"].astype(np.int64)
    _, stream_index = iv.dense_index(skey)
    return stream_index.reshape(-1).astype(np.int64)


class _Prepared:
    """Joins and orders the records of one window once, for all of its units."""

    def __init__(self, rec: Records, t0: int, t1: int, launch_gap_ns: int) -> None:
        self.t0, self.t1 = t0, t1
        # canonical order first: the launch marks inferred below then come in time order
        # (their thread lookups and unions need no sort), and the rows kept stay in it
        start = rec.ops["t"]
        end = np.maximum(rec.ops["end"], start)
        order = _op_order(rec.ops, start, end)
        ops, start, end = take_rows(rec.ops, order), start[order], end[order]
        inferred = default_mode.api_less(ops, rec.apis)
        # default agent mode: calls inferred (gtop.analysis.attribution.default_mode)
        if inferred.any():
            calls = default_mode.inferred_calls(ops, rec.syncs, rec.states, inferred)
            api_end, api_tid = self._join_inferred(ops, rec.apis, inferred, calls)
            rec = replace(rec, apis=concat_rows([rec.apis, calls]))
        else:
            api_end, api_tid = self._join(ops, rec.apis)
        got = compiled.submit_times(ops, api_end, api_tid, start, end, inferred, (t0, t1))
        rows: slice | np.ndarray | None = None  # None: all kept
        if got is None:
            sub, keep = submit_reference(ops, api_end, api_tid, start, end, inferred, (t0, t1))
            rows = None if bool(keep.all()) else kept(keep)
        elif got[2] < len(ops):  # as kept() makes them, from the C's count and bounds
            sub, keep, count, first, last = got
            rows = slice(first, last + 1) if count == last - first + 1 else np.flatnonzero(keep)
        else:
            sub = got[0]
        if rows is not None:  # the ops fed for the next window, mostly: views of the rest
            ops, start, end = take_rows(ops, rows), start[rows], end[rows]
            sub, api_tid = sub[rows], api_tid[rows]
        self.ops, self.start, self.end, self.sub, self.tid = ops, start, end, sub, api_tid
        self.keys = stream_keys(ops)
        """Each op's :func:`stream_keys` (its unit, and its stream for rule 2)."""
        self.stream_index, self.elig = self._eligible(rec.waits)
        self.host = HostIndex(rec, t0, t1, launch_gap_ns)

    @staticmethod
    def _join(ops: np.ndarray, apis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per op: end and tid of its API call (same pid and correlation), else -1.

        A correlation id may name many launches (CUPTI gave every record after a kernel
        sampling off phase one id on an H200: recordings/sampling/eager-decode.gtop), so
        of the calls with the op's key the one that started last at or before the op did
        (the innermost call of the launch just before it: a runtime call's driver call);
        when none started by then, the one that ended first.
        """
        api_end = np.full(len(ops), -1, np.int64)
        api_tid = np.full(len(ops), -1, np.int32)
        apis = take_rows(apis, apis["corr"] != 0)
        if not len(apis) or not len(ops):
            return api_end, api_tid
        akey = (apis["pid"].astype(np.int64) << 32) | apis["corr"].astype(np.int64)
        okey = (ops["pid"].astype(np.int64) << 32) | ops["corr"].astype(np.int64)
        order = iv.canonical_order([akey, apis["t"], -apis["end"], apis["tid"]])
        ordered = akey[order]
        if not len(iv.run_heads(ordered)) < len(ordered):
            # no key repeats: an op's call is the one with its key, whenever it started
            k = np.minimum(iv.search(ordered, okey), len(ordered) - 1)
            found = (ordered[k] == okey) & (ops["corr"] != 0)
            pick = order[k[found]]
            api_end[found], api_tid[found] = apis["end"][pick], apis["tid"][pick]
            return api_end, api_tid
        calls, asked = iv.pair_ranks(ordered, apis["t"][order], okey, ops["t"])
        j = np.searchsorted(calls, asked, side="right") - 1  # the latest (key, t) <= op's
        before = (j >= 0) & (ordered[np.maximum(j, 0)] == okey)
        pick = order[np.maximum(j, 0)]
        first = iv.canonical_order([akey, apis["end"], apis["tid"], apis["t"]])
        heads = first[iv.run_heads(akey[first])]  # per key: the call that ended first
        ukey = akey[heads]
        k = np.minimum(iv.search(ukey, okey), len(ukey) - 1)
        pick = np.where(before, pick, heads[k])
        found = (before | (ukey[k] == okey)) & (ops["corr"] != 0)
        api_end[found] = apis["end"][pick[found]]
        api_tid[found] = apis["tid"][pick[found]]
        return api_end, api_tid

    @classmethod
    def _join_inferred(
        cls, ops: np.ndarray, apis: np.ndarray, inferred: np.ndarray, calls: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_join` of ``ops`` with ``apis`` and the ``calls`` inferred for the ops
        of ``inferred`` (whose processes have none in ``apis``): their own launch marks
        without a search when :func:`~gtop.analysis.attribution.default_mode.own_calls`
        knows them."""
        api_end, api_tid = cls._join(ops, apis)  # no key of an inferred op is in apis
        if compiled.own_calls(ops, inferred, calls, api_end, api_tid):
            return api_end, api_tid  # in C where it loads
        own = default_mode.own_calls(ops, inferred, calls)
        if own is None:
            return cls._join(ops, concat_rows([apis, calls]))
        rows, end, tid = own
        api_end[rows], api_tid[rows] = end, tid
        return api_end, api_tid

    def _eligible(self, waits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per op: a dense stream index and its eligible time (module docstring, rule 2)."""
        ops, start, sub = self.ops, self.start, self.sub
        n = len(ops)
        if not n:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        stream_index = _stream_index(ops, self.keys)
        got = compiled.previous(stream_index, start, self.end, sub, NEVER)
        prev_end, prev_sub = (
            previous_reference(stream_index, start, self.end, sub) if got is None else got
        )
        gated = np.zeros(n, bool)
        if len(waits):
            wkey = (waits["pid"].astype(np.int64) << 32) | waits["stream"].astype(np.int64)
            by_stream = np.argsort(stream_index, kind="stable")
            for a, b in iv.runs(stream_index[by_stream]):
                idx = by_stream[a:b]
                first = ops[idx[0]]
                key = (np.int64(first["pid"]) << 32) | np.int64(first["stream"])
                w = np.sort(waits["t"][wkey == key])
                if len(w):
                    gated[idx] = np.searchsorted(w, sub[idx], "right") > np.searchsorted(
                        w, prev_sub[idx], "right"
                    )
        dep_end = np.full(n, NEVER, np.int64)
        if gated.any():
            for dev in np.unique(ops["device"][gated]):
                on_dev = ops["device"] == dev
                ends = np.sort(self.end[on_dev])
                g = np.flatnonzero(gated & on_dev)
                k = np.searchsorted(ends, start[g], side="right") - 1
                dep_end[g[k >= 0]] = ends[k[k >= 0]]
        elig = np.maximum(np.maximum(sub, prev_end), dep_end)
        return stream_index, np.minimum(elig, start)


def submit_reference(
    ops: np.ndarray,
    api_end: np.ndarray,
    api_tid: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    inferred: np.ndarray,
    window: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Per op: its submit time (the module docstring, rule 2; an inferred graph node's
    from :func:`~gtop.analysis.attribution.default_mode.graph_submits`) and whether it
    takes part in ``window`` (ends after its start, submitted before its end); in numpy
    (what :func:`compiled.submit_times <gtop.analysis.compiled.submit_times>` does in C
    where no inferred op is a graph node)."""
    sub = np.where(
        ops["submitted"] > 0,
        ops["submitted"],
        np.where(api_tid >= 0, api_end, np.where(ops["queued"] > 0, ops["queued"], start)),
    )
    if (inferred & (ops["graph"] != 0)).any():  # graph_submits gives only nodes a time
        by_graph = default_mode.graph_submits(ops, start, _stream_index(ops))
        sub = np.where(inferred & (by_graph >= 0), by_graph, sub)
    sub = np.minimum(sub, start)
    return sub, (end > window[0]) & (sub < window[1])


def previous_reference(
    stream_index: np.ndarray, start: np.ndarray, end: np.ndarray, sub: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per op: the latest end and submit time of the ops before it on its stream, outside
    its run of equal starts (a stream's starts are sorted: the ops before the first of
    its run start strictly before it), else :data:`NEVER`; in numpy (what
    :func:`compiled.previous <gtop.analysis.compiled.previous>` does in C)."""
    prev_end = np.full(len(start), NEVER, np.int64)
    prev_sub = np.full(len(start), NEVER, np.int64)
    by_stream = np.argsort(stream_index, kind="stable")
    for a, b in iv.runs(stream_index[by_stream]):
        idx = by_stream[a:b]
        heads = iv.run_heads(start[idx])
        j = np.repeat(heads, np.diff(np.append(heads, len(idx)))) - 1
        has = j >= 0
        prev_end[idx[has]] = np.maximum.accumulate(end[idx])[j[has]]
        prev_sub[idx[has]] = np.maximum.accumulate(sub[idx])[j[has]]
    return prev_end, prev_sub


def _op_order(ops: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The canonical order of ``ops`` by ``first``, then ``second`` (start/end times), then
    the op's identity fields, so that ties never depend on the input order."""
    return iv.canonical_order(
        [
            first,
            second,
            ops["pid"],
            ops["device"],
            ops["stream"],
            ops["corr"],
            ops["kind"],
            ops["label"],
        ]
    )


def _not_traced(p: Partition, spans: iv.Spans) -> Partition:
    """``p`` with every segment inside ``spans`` (clipped to the window) made one
    ``NOT_TRACED`` segment per span, the segments around cut at its edges (rule 4)."""
    t0, t1 = int(p.starts[0]), int(p.ends[-1])
    spans = iv.clip(spans, t0, t1)
    if not len(spans):
        return p
    edges = iv.unique_sorted(np.concatenate((p.starts, spans.starts, spans.ends, [t1])))
    starts, ends = edges[:-1], edges[1:]
    traced = iv.owner(spans, starts) < 0
    starts, ends = starts[traced], ends[traced]
    seg = np.searchsorted(p.starts, starts, side="right") - 1
    order = np.argsort(np.concatenate((starts, spans.starts)), kind="stable")
    n = len(spans)

    def cat(values: np.ndarray, fill: int) -> np.ndarray:
        return np.concatenate((values[seg], np.full(n, fill, values.dtype)))[order]

    return Partition(
        np.concatenate((starts, spans.starts))[order],
        np.concatenate((ends, spans.ends))[order],
        cat(p.causes, Cause.NOT_TRACED),
        cat(p.tids, -1),
        cat(p.next_kind, -1),
        cat(p.next_label, -1),
    )


def estimated(p: Partition) -> np.ndarray:
    """ns per cause over ``p``'s window with each ``NOT_TRACED`` span given the cause mix
    of the traced time between it and the span before (kernel sampling's on phase just
    before that off phase: each sampling period is estimated from its own traced part, so
    a stretch traced in full, such as the start before sampling began, keeps its weight).
    A span with no traced time before it in the window takes the mix of the traced time
    after it. All zeros when nothing was traced."""
    off = p.causes == Cause.NOT_TRACED
    out = np.zeros(len(Cause))
    if off.all():
        return out
    np.add.at(out, p.causes[~off], (p.ends - p.starts)[~off].astype(np.float64))
    return out + untraced_estimates(p).sum(axis=0)


def untraced_estimates(p: Partition) -> np.ndarray:
    """What :func:`estimated` gives each ``NOT_TRACED`` segment of ``p``: ns per cause
    (columns, float) per such segment (rows, in time order); zeros when nothing was
    traced."""
    dur = (p.ends - p.starts).astype(np.float64)
    off = p.causes == Cause.NOT_TRACED
    if off.all() or not off.any():
        return np.zeros((int(off.sum()), len(Cause)))
    stratum = np.cumsum(off) - off  # the off segments before a segment: its period
    n = int(stratum[-1]) + 1
    mix = np.zeros((n, len(Cause)))
    np.add.at(mix, (stratum[~off], p.causes[~off]), dur[~off])
    traced = mix.sum(axis=1)
    has = np.flatnonzero(traced > 0)
    owner = has[np.minimum(np.searchsorted(has, stratum[off]), len(has) - 1)]
    return mix[owner] * (dur[off] / traced[owner])[:, None]


_NO_PIECES = Pieces(
    np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.uint8), np.empty(0, np.int64)
)


def _attribute_unit(
    prep: _Prepared, unit: Unit, idx: np.ndarray, main: int, off: iv.Spans
) -> UnitResult:
    """Rules 1-4 for one unit (``idx``: its rows of ``prep.ops``; ``off``: its untraced
    spans)."""
    t0, t1 = prep.t0, prep.t1
    # the only unit: idx is every row in order, so views instead of copies
    rows: np.ndarray | slice = slice(None) if len(idx) == len(prep.ops) else idx
    ops = take_rows(prep.ops, rows)
    start, end, sub, elig = prep.start[rows], prep.end[rows], prep.sub[rows], prep.elig[rows]
    tid = prep.tid[rows]
    seg = device_segments(ops, start, end, sub, elig, tid, main, (t0, t1))

    # Rule 3: the host's runs split by what their charged thread was doing.
    host_tid = seg.gap_tid[seg.host_gap]
    charged = iv.unique_sorted(host_tid)
    split = []
    for t in charged:  # mostly one thread: its runs are all of them
        if len(charged) == 1:
            hs, he, hc, run = prep.host.host_causes(int(t), seg.host)
        else:
            mine = np.flatnonzero(host_tid == t)
            spans = iv.Spans(seg.host.starts[mine], seg.host.ends[mine])
            hs, he, hc, span = prep.host.host_causes(int(t), spans)
            run = mine[span]
        split.append(Pieces(hs, he, hc, run))
    pieces = split[0] if len(split) == 1 else _NO_PIECES
    if len(split) > 1:
        pieces = Pieces(*(np.concatenate(x) for x in zip(*split, strict=True)))
    partition = _not_traced(Partition(*assemble(seg, pieces)), off)

    threads = iv.unique_sorted(np.concatenate((tid[tid >= 0], charged))).astype(np.int64)
    blocked, runnable, on_cpu = prep.host.thread_panels(threads)
    dep, queue = iv.clipped_measure(sub, elig, t0, t1), iv.clipped_measure(elig, start, t0, t1)
    panels = dict(zip(PANELS, (blocked, runnable, dep, queue), strict=True))
    return UnitResult(
        unit=unit,
        t0=t0,
        t1=t1,
        totals=partition.totals(),
        estimate=estimated(partition) if (partition.causes == Cause.NOT_TRACED).any() else None,
        panels=panels,
        service={"cpu": on_cpu, "gpu": iv.clipped_total(start, end, t0, t1)},
        partition=partition,
        threads=tuple(int(t) for t in threads),
    )
