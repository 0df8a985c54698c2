"""What-if: a window's work replayed with a change, to predict what a fix buys (issue 25).

The recording's window is rebuilt as the dependency structure the attribution already
has (:mod:`gtop.analysis.attribution.partition`): the GPU's ops per stream in order with their
execution times, when each was submitted, and the launching (main) thread's time split
by cause (the host-cause rule, launch path and default mode's inferred calls included).
The replay then runs that structure forward on a simulated clock:

* the host thread's time is its segments in order, each scaled by the change (``H:CTRL``
  launch path, ``H:APP`` work, ``H:IO``, ``OFF_CPU`` waits; the DataLoader waits alone);
  an op is submitted at the simulated time its original submit maps to;
* a stream runs its ops in order: an op starts at the later of its submit and the end of
  the op before it on its stream, plus its own GPU-side latency (what it waited beyond
  both in the recording);
* each stretch the thread spent waiting for the GPU (``H:WAIT_GPU``: a synchronise,
  ``.item()``) is a sync: the simulated thread waits there until every op submitted
  before it has finished, however long that now is.

So removing host time helps only until the GPU is the bottleneck, and a faster kernel
helps only where the host waits for it: the replay says how much, where subtracting a
cause's share would not. Changes (:func:`parse_change`): a cause scaled, syncs removed,
CUDA graphs (launch path gone, kernels back to back with the GPU's inter-node gap), a
named kernel N× faster, a DataLoader that keeps up, host work moved to the GPU.

The prediction is the ratio of two replays, the changed one and the unchanged one, over
the same whole steps (:mod:`gtop.analysis.diagnosis.steps`), so the model's own error in
replaying the recording cancels out as far as it can; that error is reported.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import default_mode
from gtop.analysis.attribution.causes import LABELS, OFF_CAUSES, Cause
from gtop.analysis.attribution.host_window import LAUNCH_GAP_NS, frames_of
from gtop.analysis.attribution.partition import _Prepared
from gtop.analysis.attribution.records import OP_KERNEL, Records
from gtop.analysis.diagnosis.range_steps import RangeSteps, find_range_steps
from gtop.analysis.diagnosis.steps import Steps, find_steps
from gtop.analysis.diagnosis.verdict import INPUT_FRAMES, mostly_input
from gtop.analysis.kernels.demangle import demangle
from gtop.core.pyframe import is_python

GRAPH_GAP_NS = 800
"""The GPU's gap between two kernel nodes of a CUDA graph replay when the recording
does not show the GPU's own back-to-back gap (:func:`gpu_gap`): the floor of that gap
on the H100 of the committed recordings (``recordings/fixes/item-every-step``,
``loader-1-worker``, ``preprocess-host``: 0.77-0.83 µs at the 1st percentile). A graph
replays its nodes at least about that fast."""
GRAPH_GAP_RANGE = (2.0, 0.5)
"""The pessimistic and optimistic inter-node gap, as multiples of the one used."""
OFFLOAD_COST = 0.05
"""Host work moved to the GPU costs the GPU this share of its host time: an assumption
(vectorised numpy on one core against the same array work on a GPU), with
:data:`OFFLOAD_RANGE` as its uncertainty."""
OFFLOAD_RANGE = (0.2, 0.0)
"""The pessimistic and optimistic GPU cost of offloaded host work."""
BACK_TO_BACK_NS = 5_000
"""In the default agent mode an op's submit time is inferred as its start; an op that
starts within this of the end of the op before it on its stream was queued behind it,
so it was submitted no later than that op (when the thread launched the burst)."""
MAX_SPAN_NS = 30_000_000_000
MAX_OPS = 40_000
"""At most this much of the window, and this many ops, are replayed (its middle): a
steady state repeats, and a few hundred of its steps predict it as well as all."""
JOIN_MARGIN_NS = 1_000_000_000
"""How long before the replayed span an op's launch or a thread's state is looked for
(as the attribution's blocks look back)."""
STACK_AGE_NS = 20_000_000
"""How old a stack sample may be to name an on-CPU segment (as the flamegraph's)."""
HOST_CAUSES = (Cause.H_CTRL, Cause.H_APP, Cause.H_IO, Cause.OFF_CPU, Cause.UNKNOWN)
"""Host causes a change may scale."""
CHANGE_TEXT = re.compile(
    r"^\s*(?:(kernel):([^=]+?)|([A-Za-z_:]+))\s*(?:=\s*([^=\s]+))?\s*$", re.IGNORECASE
)


class ChangeError(ValueError):
    """A ``--what-if`` that is not one (the message says what is)."""


@dataclass(frozen=True)
class Change:
    """One change to replay: ``kind`` is ``cause`` (``target`` a host cause's label,
        its time times ``factor``), ``kernel`` (kernels whose name matches the glob
        ``target`` take ``factor`` of their time), ``sync`` (waits for the GPU removed),
        ``graphs`` (CUDA graphs: ``factor`` the inter-node gap in ns, -1 for
    :func:`gpu_gap`), ``loader`` (the
        DataLoader keeps up: the waits for it removed) or ``offload`` (``H:APP`` moved to
        the GPU at ``factor`` of its host time)."""

    kind: str
    target: str = ""
    factor: float = 0.0

    def text(self) -> str:
        """The change as ``--what-if`` takes it."""
        if self.kind == "cause":
            return f"{self.target}={self.factor:g}"
        if self.kind == "kernel":
            return f"kernel:{self.target}={self.factor:g}"
        if self.kind == "graphs" and self.factor < 0:
            return "graphs"
        if self.kind in ("graphs", "offload"):
            return f"{self.kind}={self.factor:g}"
        return f"{self.kind}=0"


HELP = (
    "CAUSE=F (H:CTRL, H:APP, H:IO, OFF_CPU, UNKNOWN: that host time times F), "
    "kernel:GLOB=F (kernels named GLOB take F of their time), sync=0, loader (the "
    "DataLoader keeps up), graphs[=GAP_NS], offload[=F] (H:APP moved to the GPU at F "
    "of its host time)"
)


def parse_change(text: str) -> Change:
    """A change from its ``--what-if`` text (:data:`HELP`).

    Raises:
        ChangeError: not a change.
    """
    m = CHANGE_TEXT.match(text)
    if not m:
        raise ChangeError(f"--what-if {text!r}: expected {HELP}")
    name, glob, value = m.group(1) or m.group(3), m.group(2), m.group(4)
    try:
        factor = float(value) if value is not None else None
    except ValueError:
        raise ChangeError(f"--what-if {text!r}: {value!r} is not a number") from None
    if factor is not None and not (np.isfinite(factor) and factor >= 0):
        raise ChangeError(f"--what-if {text!r}: the factor must be a number >= 0")
    upper = name.upper()
    if upper in (LABELS[c] for c in HOST_CAUSES) and glob is None and factor is not None:
        return Change("cause", upper, factor)
    if name.lower() == "kernel" and glob and factor is not None:
        if factor <= 0:
            raise ChangeError(f"--what-if {text!r}: a kernel cannot take no time (F > 0)")
        return Change("kernel", glob.strip(), factor)
    if name.lower() in ("sync", "loader") and glob is None and factor in (None, 0.0):
        return Change(name.lower())
    if name.lower() == "graphs" and glob is None:
        return Change("graphs", factor=-1.0 if factor is None else factor)
    if name.lower() == "offload" and glob is None:
        return Change("offload", factor=OFFLOAD_COST if factor is None else factor)
    raise ChangeError(f"--what-if {text!r}: expected {HELP}")


@dataclass(frozen=True)
class Timeline:
    """One device's work over ``[t0, t1)`` and its launching thread ``tid``: ops in
    start order (submit, start, end, a dense stream index, kind and label), the
    thread's segments tiling the window (cause; ``input``: an ``OFF_CPU`` wait for a
    DataLoader, from its stack) and the iteration found in the busiest stream."""

    t0: int
    t1: int
    device: int
    tid: int
    sub: np.ndarray
    start: np.ndarray
    end: np.ndarray
    stream: np.ndarray
    kind: np.ndarray
    label: np.ndarray
    seg_start: np.ndarray
    seg_end: np.ndarray
    seg_cause: np.ndarray
    seg_input: np.ndarray
    seg_joined: np.ndarray
    """Per segment: an ``OFF_CPU`` wait while another thread of the process launched
    this device's work (a training step's main thread in ``backward()`` while the
    autograd engine's thread launches it): that thread's work, not a wait to remove."""
    names: Mapping[int, str] = field(default_factory=dict)
    steps: Steps | None = None
    window_steps: tuple[int, float] | None = None
    """Whole steps in the whole window (before :data:`MAX_OPS` cut it) and their mean
    length in ns: the step time the report states."""
    step_range: str | None = None
    """The NVTX range the steps were taken from (None: the kernel sequence)."""

    @property
    def ops(self) -> int:
        return len(self.start)


def build_timeline(
    records: Records,
    t0: int,
    t1: int,
    names: Mapping[int, str] | None = None,
    stacks: Mapping[int, Sequence[str]] | None = None,
    device: int | None = None,
    window: tuple[np.ndarray, int, int] | None = None,
    ranges: RangeSteps | None = None,
) -> Timeline | None:
    """The timeline of ``device`` (default: the one with the most ops) over ``[t0, t1)``
    (its middle :data:`MAX_SPAN_NS` and :data:`MAX_OPS` at most: :func:`replay_span`),
    or None without ops. ``window``: the whole window's ops and edges when ``records``
    hold only that middle (:func:`timeline_from_streams`), for the steps it states.
    ``ranges``: the steps an NVTX range marks in the whole window, taken over the
    repeating kernel sequence."""
    on = records.ops if device is None else records.ops[records.ops["device"] == device]
    whole = window or (on, t0, t1)
    t0, t1 = replay_span(on["t"], t0, t1)
    prep = _Prepared(_clipped(records, t0, t1), t0, t1, LAUNCH_GAP_NS)
    if device is None and len(prep.ops):
        devices, counts = np.unique(prep.ops["device"], return_counts=True)
        device = int(devices[np.argmax(counts)])
    mine = np.flatnonzero(prep.ops["device"] == device)
    if not len(mine):
        return None
    ops = prep.ops[mine]
    tids = prep.tid[mine]
    known = tids[tids >= 0]
    if len(known):
        values, counts = np.unique(known, return_counts=True)
        tid = int(values[np.argmax(counts)])
    else:
        tid = int(ops["pid"].min())
    start, end = prep.start[mine], prep.end[mine]
    stream = prep.stream_index[mine]
    seg_start, seg_end, seg_cause, _ = prep.host.host_causes(
        tid, iv.Spans(np.array([t0], np.int64), np.array([t1], np.int64))
    )
    inferred = default_mode.api_less(ops, records.apis)
    sub = _queued_submits(prep.sub[mine], start, end, stream, inferred)
    sub = _before_waits(sub, inferred, seg_start, seg_end, seg_cause)
    seg_input = _input_waits(prep, tid, seg_start, seg_end, seg_cause, stacks or {})
    seg_joined = _joined_waits(seg_start, seg_end, seg_cause, prep.sub[mine], tids, tid)
    seg_joined &= ~seg_input  # a DataLoader wait stays one
    flags = seg_input.astype(np.int8) | (seg_joined.astype(np.int8) << 1)
    seg_start, seg_end, seg_cause, flags = _merged(seg_start, seg_end, seg_cause, flags)
    seg_input, seg_joined = (flags & 1) > 0, (flags & 2) > 0
    busiest = np.bincount(stream).argmax()
    on_busiest = np.flatnonzero(stream == busiest)
    if ranges is not None:
        steps = _range_steps(ranges, t0, sub[on_busiest], on_busiest)
        window = _regular(ranges.starts)
    else:
        steps, window = _kernel_steps(ops, on_busiest, whole)
    return Timeline(
        t0,
        t1,
        device,
        tid,
        sub,
        start,
        end,
        stream,
        ops["kind"].copy(),
        ops["label"].copy(),
        seg_start,
        seg_end,
        seg_cause,
        seg_input,
        seg_joined,
        dict(names or {}),
        steps,
        window,
        ranges.name if ranges is not None else None,
    )


def _kernel_steps(
    ops: np.ndarray, on_busiest: np.ndarray, whole: tuple[np.ndarray, int, int]
) -> tuple[Steps | None, tuple[int, float] | None]:
    """The steps of the repeating op sequence on the busiest stream (anchors: indexes of
    ``ops``), and over the whole window."""
    found = find_steps(_symbols(ops)[on_busiest])
    if found is None:
        return None, None
    steps = Steps(on_busiest[found.anchors], found.period, found.match, found.symbol)
    first = ops[on_busiest[0]]
    return steps, _window_steps(whole[0], first["pid"], first["stream"], found.symbol, *whole[1:])


def _range_steps(
    ranges: RangeSteps, t0: int, sub: np.ndarray, on_busiest: np.ndarray
) -> Steps | None:
    """The steps an NVTX range marks from ``t0`` on, each anchored at the first op on
    the busiest stream submitted in it (``sub``: those ops' submit times, in order)."""
    later = ranges.starts >= t0  # a step begun before: its first op is not replayed
    starts, ends = ranges.starts[later], ranges.ends[later]
    first = np.searchsorted(np.maximum.accumulate(sub), starts, side="left")
    ok = first < len(sub)
    ok[ok] = sub[first[ok]] < ends[ok]  # a step with no op there anchors nothing
    idx = np.unique(first[ok])
    if len(idx) < 2:
        return None
    per_step = int(np.median(np.diff(idx)))
    return Steps(on_busiest[idx], per_step, 1.0, -1)


def _regular(starts: np.ndarray) -> tuple[int, float] | None:
    """Whole steps between the regular run of ``starts`` and their mean length (ns)."""
    a = regular_anchors(starts, np.arange(len(starts)))
    if len(a) < 2:
        return None
    return len(a) - 1, float(starts[a[-1]] - starts[a[0]]) / (len(a) - 1)


def _window_steps(
    ops: np.ndarray, pid: int, stream: int, symbol: int, t0: int, t1: int
) -> tuple[int, float] | None:
    """Whole steps over ``[t0, t1)`` (each starting at an op ``symbol`` on the stream)
    and their mean length (ns)."""
    t = ops["t"]
    hit = (
        (_symbols(ops) == symbol)
        & (ops["stream"] == stream)
        & (ops["pid"] == pid)
        & (t >= t0)
        & (t < t1)
    )
    return _regular(np.sort(t[hit]))


OP_STREAMS = ("kernel", "memcpy", "memset")


def timeline_from_streams(
    data: Mapping[str, np.ndarray],
    ops: np.ndarray | None,
    t0: int,
    t1: int,
    names: Mapping[int, str],
    stacks: Mapping[int, Sequence[str]],
    device: int | None = None,
    range_names: Mapping[int, str] | None = None,
) -> Timeline | None:
    """:func:`build_timeline` from a window's raw record batches (``ops``: their ops
    table when built already), only the rows near the span replayed projected (a long
    window's calls and states are not copied); the steps from the ``marker`` rows'
    NVTX ranges where one marks them (``range_names``: their names by id)."""
    from gtop.analysis.attribution.records import mark_comm
    from gtop.analysis.distributed.ranks import comm_labels

    if ops is None:
        ops = Records.from_streams({k: data[k] for k in OP_STREAMS if k in data}).ops
    on = ops
    if device is not None and not bool((ops["device"] == device).all()):
        on = ops[ops["device"] == device]
    a, b = replay_span(on["t"], t0, t1)
    lo = a - JOIN_MARGIN_NS
    near = {}
    for name, rows in data.items():
        if name in OP_STREAMS or not len(rows) or "t_ns" not in (rows.dtype.names or ()):
            continue
        near[name] = rows[_near(rows, lo, b)]
    span_ops = ops[_near(ops, lo, b, "t", "end")]
    mark_comm(span_ops, comm_labels(names))
    records = Records.from_streams(near, span_ops)
    markers = data.get("marker")
    ranges = None
    if markers is not None and len(markers):
        ranges = find_range_steps(markers, range_names or {}, t0, t1)
    return build_timeline(records, a, b, names, stacks, device, (on, t0, t1), ranges)


def _near(rows: np.ndarray, lo: int, hi: int, t: str = "t_ns", end: str = "end_ns") -> np.ndarray:
    """Which rows overlap ``[lo, hi)`` (an instant: lies in it; an interval still open,
    end -1: starts before ``hi``)."""
    start = rows[t]
    if end not in (rows.dtype.names or ()):
        return (start >= lo) & (start < hi)
    e = rows[end]
    return (start < hi) & ((e >= lo) | (e < 0))


def _symbols(ops: np.ndarray) -> np.ndarray:
    """One integer per op: its kind and label (kernel name, copy kind)."""
    return (ops["label"].astype(np.int64) << 3) | ops["kind"].astype(np.int64)


def _clipped(records: Records, t0: int, t1: int) -> Records:
    """The rows of ``records`` that can matter to ``[t0, t1)``: those overlapping it
    (ops and calls from :data:`JOIN_MARGIN_NS` before it: a queued op's launch)."""

    def near(rows: np.ndarray, end: str = "end") -> np.ndarray:
        keep = (rows[end] >= t0 - JOIN_MARGIN_NS) & (rows["t"] < t1)
        return rows if bool(keep.all()) else rows[keep]

    return replace(
        records,
        ops=near(records.ops),
        apis=near(records.apis),
        waits=near(records.waits, "t"),
        syncs=near(records.syncs),
        states=near(records.states),
        samples=near(records.samples, "t"),
    )


def replay_span(starts: np.ndarray, t0: int, t1: int) -> tuple[int, int]:
    """The middle of ``[t0, t1)`` no longer than :data:`MAX_SPAN_NS` and holding at most
    :data:`MAX_OPS` of the ops starting at ``starts``."""
    if t1 - t0 > MAX_SPAN_NS:
        mid = (t0 + t1) // 2
        t0, t1 = mid - MAX_SPAN_NS // 2, mid + MAX_SPAN_NS // 2
    s = starts[(starts >= t0) & (starts < t1)]
    if len(s) > MAX_OPS:
        mid = len(s) // 2
        lo, hi = mid - MAX_OPS // 2, mid + MAX_OPS // 2 - 1
        s = np.partition(s, (lo, hi))  # the two order statistics, without a sort
        t0, t1 = int(s[lo]), int(s[hi]) + 1
    return t0, t1


def _queued_submits(
    sub: np.ndarray, start: np.ndarray, end: np.ndarray, stream: np.ndarray, inferred: np.ndarray
) -> np.ndarray:
    """Default mode's inferred submits (an op's start) with each op queued behind the op
    before it on its stream (:data:`BACK_TO_BACK_NS`) submitted with that op instead."""
    if not inferred.any():
        return sub
    sub = sub.copy()
    order = np.lexsort((start, stream))
    s, e, st = start[order], end[order], stream[order]
    queued = np.zeros(len(order), bool)
    queued[1:] = (st[1:] == st[:-1]) & (s[1:] - e[:-1] < BACK_TO_BACK_NS) & inferred[order][1:]
    # each queued op takes the submit of the first op of its burst
    head = np.where(queued, 0, np.arange(len(order)))
    head = np.maximum.accumulate(head)
    sub[order] = np.where(queued, sub[order][head], sub[order])
    return sub


def _merged(
    starts: np.ndarray, ends: np.ndarray, causes: np.ndarray, flags: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Consecutive touching segments of one cause (and flag) as one."""
    if not len(starts):
        return starts, ends, causes, flags
    head = np.ones(len(starts), bool)
    head[1:] = (causes[1:] != causes[:-1]) | (flags[1:] != flags[:-1]) | (starts[1:] != ends[:-1])
    heads = np.flatnonzero(head)
    lasts = np.append(heads[1:] - 1, len(starts) - 1)
    return starts[heads], ends[lasts], causes[heads], flags[heads]


def _before_waits(
    sub: np.ndarray,
    inferred: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    causes: np.ndarray,
) -> np.ndarray:
    """Default mode's inferred submits that fall inside the thread's wait for the GPU
    moved to just before that wait began: a thread waiting in a synchronise launches
    nothing, so the op was queued before it."""
    runs = _wait_runs(starts, ends, causes)
    if not inferred.any() or not len(runs):
        return sub
    j = iv.owner(runs, sub)
    inside = inferred & (j >= 0)
    return np.where(inside, runs.starts[np.maximum(j, 0)] - 1, sub)


def _wait_runs(starts: np.ndarray, ends: np.ndarray, causes: np.ndarray) -> iv.Spans:
    """The thread's waits for the GPU: runs of ``H:WAIT_GPU`` segments."""
    w = causes == Cause.H_WAIT_GPU
    return iv.union(starts[w], ends[w])


def _input_waits(
    prep: _Prepared,
    tid: int,
    starts: np.ndarray,
    ends: np.ndarray,
    causes: np.ndarray,
    stacks: Mapping[int, Sequence[str]],
) -> np.ndarray:
    """Per segment: an ``OFF_CPU`` wait for a DataLoader: its stack is a DataLoader's, or
    it has no Python frames while most of the Python-framed waits are DataLoader waits
    (:func:`~gtop.analysis.diagnosis.verdict.mostly_input`: the rule that names the verdict)."""
    out = np.zeros(len(starts), bool)
    off = np.flatnonzero(causes == Cause.OFF_CPU)
    if not len(off) or not stacks:
        return out
    ids = prep.host.stack_ids(tid, starts[off], ends[off], STACK_AGE_NS)
    kinds = {int(s): _wait_kind(frames_of(int(s), stacks)) for s in np.unique(ids) if s >= 0}
    marks = [kinds.get(int(s)) for s in ids]
    loader = np.array([m is True for m in marks])
    framed = np.array([m is not None for m in marks])
    took = (ends - starts)[off]
    if mostly_input(float(took[loader].sum()), float(took[framed].sum())):
        loader |= ~framed
    out[off] = loader
    return out


def _joined_waits(
    starts: np.ndarray,
    ends: np.ndarray,
    causes: np.ndarray,
    sub: np.ndarray,
    tids: np.ndarray,
    tid: int,
) -> np.ndarray:
    """Per segment of thread ``tid``: an ``OFF_CPU`` wait inside which an op was
    submitted by another known thread (``tids``: each op's launching thread, -1 when not
    known; ``sub``: its submit)."""
    out = np.zeros(len(starts), bool)
    others = np.sort(sub[(tids >= 0) & (tids != tid)])
    off = np.flatnonzero(causes == Cause.OFF_CPU)
    if not len(others) or not len(off):
        return out
    first = np.searchsorted(others, starts[off], side="left")
    out[off] = first < np.searchsorted(others, ends[off], side="left")
    return out


def _wait_kind(frames: Sequence[str]) -> bool | None:
    """A wait's stack in DataLoader frames (True), in other Python frames (False), or
    without Python frames (None: it says nothing)."""
    if not any(is_python(f) for f in frames):
        return None
    return bool(INPUT_FRAMES.search("\n".join(frames)))


@dataclass(frozen=True)
class Outcome:
    """One replay over the measured span: ``span_ns`` of wall time for ``steps`` whole
    steps (0: no steps found, the span is the window), ``busy_ns`` of it on-GPU, and
    the off-GPU time by cause (:class:`Cause` codes)."""

    span_ns: int
    busy_ns: int
    steps: int
    off_ns: Mapping[int, int]

    @property
    def gar(self) -> float:
        return self.busy_ns / self.span_ns if self.span_ns > 0 else 0.0

    @property
    def step_ns(self) -> float:
        return self.span_ns / self.steps if self.steps else float(self.span_ns)

    def dominant(self) -> str:
        """The widest off-GPU cause, or ``G:COMP`` when the GPU is busy most of the time."""
        if not self.off_ns or self.gar >= 0.8:
            return "G:COMP"
        return LABELS[max(self.off_ns, key=lambda c: (self.off_ns[c], -c))]


@dataclass(frozen=True)
class _Knobs:
    """A list of changes as the replay applies them."""

    host_factor: np.ndarray
    input_factor: float
    kernel_factor: np.ndarray
    graph_gap_ns: float | None
    offload: float | None
    syncs: bool


def _knobs(tl: Timeline, changes: Sequence[Change]) -> _Knobs:
    host = np.ones(len(Cause))
    host[Cause.H_WAIT_GPU] = 0.0  # replayed as syncs
    input_factor = 1.0
    kernel = np.ones(tl.ops)
    graph_gap = offload = None
    syncs = True
    for ch in changes:
        if ch.kind == "cause":
            host[LABELS.index(ch.target)] = ch.factor
        elif ch.kind == "loader":
            input_factor = 0.0
        elif ch.kind == "sync":
            syncs = False
        elif ch.kind == "graphs":
            host[Cause.H_CTRL] = 0.0
            graph_gap = gpu_gap(tl) if ch.factor < 0 else ch.factor
        elif ch.kind == "offload":
            host[Cause.H_APP] = 0.0
            offload = ch.factor
        elif ch.kind == "kernel":
            kernel[_matching(tl, ch.target)] *= ch.factor
    return _Knobs(host, input_factor, kernel, graph_gap, offload, syncs)


def _matching(tl: Timeline, glob: str) -> np.ndarray:
    """Ops that are kernels named by ``glob`` (their recorded or demangled name)."""
    hit = [
        label
        for label, name in tl.names.items()
        if fnmatch.fnmatchcase(name, glob) or fnmatch.fnmatchcase(demangle(name), glob)
    ]
    return (tl.kind == OP_KERNEL) & np.isin(tl.label, np.array(hit, np.int64))


def gpu_gap(tl: Timeline) -> float:
    """The GPU's own gap between two back-to-back ops on a stream: the 1st percentile of
    the gaps under :data:`BACK_TO_BACK_NS` on the busiest stream when there are at
    least 20, else :data:`GRAPH_GAP_NS`."""
    if not tl.ops:
        return float(GRAPH_GAP_NS)
    on = tl.stream == np.bincount(tl.stream).argmax()
    s, e = tl.start[on], tl.end[on]
    gaps = s[1:] - np.maximum.accumulate(e)[:-1]
    gaps = gaps[(gaps > 0) & (gaps < BACK_TO_BACK_NS)]
    return float(np.percentile(gaps, 1)) if len(gaps) >= 20 else float(GRAPH_GAP_NS)


def matches(tl: Timeline, glob: str) -> int:
    """How many of the timeline's ops a ``kernel:GLOB`` change touches."""
    return int(np.count_nonzero(_matching(tl, glob)))


def replay(tl: Timeline, changes: Sequence[Change] = ()) -> Outcome:
    """The window replayed with ``changes`` (see the module docstring)."""
    k = _knobs(tl, changes)
    dur = (tl.seg_end - tl.seg_start).astype(np.float64)
    factor = k.host_factor[tl.seg_cause]
    factor = np.where(tl.seg_input, factor * k.input_factor, factor)
    factor = np.where(tl.seg_joined, 1.0, factor)  # another thread's work: as recorded
    scaled = dur * factor
    clock = np.concatenate(([0.0], np.cumsum(scaled)))  # host time at each segment's start

    def host_time(t: np.ndarray) -> np.ndarray:
        t = np.clip(t, tl.t0, tl.t1)
        j = np.clip(np.searchsorted(tl.seg_start, t, side="right") - 1, 0, len(dur) - 1)
        return clock[j] + np.clip(t - tl.seg_start[j], 0, dur[j]) * factor[j]

    waits = sync_starts(tl) if k.syncs else np.empty(0, np.int64)
    wait_clock = host_time(waits)

    d = (tl.end - tl.start) * k.kernel_factor
    if k.offload is not None:
        d = d + _offloaded(tl, dur) * k.offload
    lat = _latency(tl)
    if k.graph_gap_ns is not None:
        lat = np.where(tl.kind == OP_KERNEL, k.graph_gap_ns, lat)
    seg = np.searchsorted(waits, tl.sub, side="left")  # syncs before each op's submit
    ends, delays = _run_gpu(host_time(tl.sub), d + lat, seg, tl.stream, wait_clock)
    # a graph replay is one GPU record (the agent traces graphs whole): the gaps between
    # its nodes are inside it, so GAR counts them busy as gtop will measure it
    starts = ends - d - (lat if k.graph_gap_ns is not None else 0.0)
    host_end = float(host_time(np.array([tl.t1]))[0]) + delays[-1]

    if tl.steps is not None:
        a = regular_steps(tl)
        if len(a) >= 2:
            t_a, t_b = float(starts[a[0]]), float(starts[a[-1]])
            return _outcome(
                tl, starts, ends, t_a, t_b, len(a) - 1, scaled, clock, waits, delays, wait_clock
            )
    t_b = max(host_end, float(ends.max()) if len(ends) else 0.0)
    return _outcome(tl, starts, ends, 0.0, t_b, 0, scaled, clock, waits, delays, wait_clock)


def regular_steps(tl: Timeline) -> np.ndarray:
    """The anchors of the timeline's steady run of steps (:func:`regular_anchors`)."""
    assert tl.steps is not None
    return regular_anchors(tl.start, tl.steps.anchors)


def regular_anchors(starts: np.ndarray, a: np.ndarray) -> np.ndarray:
    """The anchors of the steady run of steps: the longest run of consecutive steps
    whose lengths are within half and twice the median step."""
    gaps = np.diff(starts[a]).astype(np.float64)
    if not len(gaps):
        return a
    med = np.median(gaps)
    ok = np.concatenate(([False], (gaps >= med / 2) & (gaps <= med * 2), [False]))
    edges = np.flatnonzero(np.diff(ok.astype(np.int8)))  # run starts, run ends (gap indices)
    if not len(edges):
        return a[:1]
    heads, tails = edges[0::2], edges[1::2]
    k = int(np.argmax(tails - heads))
    return a[heads[k] : tails[k] + 1]


def sync_starts(tl: Timeline) -> np.ndarray:
    """Where each of the thread's waits for the GPU begins."""
    return _wait_runs(tl.seg_start, tl.seg_end, tl.seg_cause).starts


def _latency(tl: Timeline) -> np.ndarray:
    """Per op: how long it waited beyond its submit and the end of the op before it on
    its stream (the GPU's own launch latency or gap)."""
    order = np.lexsort((tl.start, tl.stream))
    s, e, st = tl.start[order], tl.end[order], tl.stream[order]
    prev_end = np.full(len(order), np.iinfo(np.int64).min)
    same = np.zeros(len(order), bool)
    same[1:] = st[1:] == st[:-1]
    run_end = np.maximum.accumulate(np.where(same, e, np.iinfo(np.int64).min))
    prev_end[1:] = np.where(same[1:], run_end[:-1], prev_end[1:])
    out = np.empty(len(order), np.float64)
    out[order] = np.maximum(s - np.maximum(tl.sub[order], prev_end), 0)
    return out


def _offloaded(tl: Timeline, dur: np.ndarray) -> np.ndarray:
    """Per op: the ``H:APP`` host time just before its submit (since the op before),
    which an offload adds to it as GPU work."""
    app = np.flatnonzero(tl.seg_cause == Cause.H_APP)
    out = np.zeros(tl.ops)
    if not len(app) or not tl.ops:
        return out
    order = np.argsort(tl.sub, kind="stable")
    nxt = np.searchsorted(tl.sub[order], tl.seg_end[app], side="left")
    ok = nxt < tl.ops
    np.add.at(out, order[nxt[ok]], dur[app][ok])
    return out


def _run_gpu(
    submit: np.ndarray, cost: np.ndarray, seg: np.ndarray, stream: np.ndarray, wait_at: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each op's simulated end, and the host's delay after each sync (index 0: none yet).

    Ops are grouped by (syncs before them, stream). In a group an op ends at
    ``max(end before it, submit + delay) + cost``, which unrolls to the group's prefix
    sums of cost and a running maximum; the groups and the syncs are then walked once in
    order, each sync delaying the host until every op before it has ended.
    """
    n = len(submit)
    delays = np.zeros(len(wait_at) + 1)
    if not n:
        return np.empty(0), delays
    order = np.lexsort((np.arange(n), stream, seg))
    c, m = cost[order], submit[order]
    g_key = seg[order] * (int(stream.max()) + 1) + stream[order]
    heads = iv.run_heads(g_key)
    group = np.cumsum(np.isin(np.arange(n), heads)) - 1
    q = np.cumsum(c)
    q0 = np.concatenate(([0.0], q))[heads][group]  # prefix before each group
    q_in = q - q0  # cost within the group up to and including the op
    x = m - (q_in - c)
    span = max(float(np.ptp(x)) if n else 0.0, 1.0) * 4
    alpha = np.maximum.accumulate(x + group * span) - group * span + q_in
    lasts = np.append(heads[1:] - 1, n - 1)
    g_stream = stream[order][heads].tolist()
    g_seg = seg[order][heads].tolist()
    g_q = q_in[lasts].tolist()
    g_a = alpha[lasts].tolist()
    n_streams = int(stream.max()) + 1
    streams_end = [float("-inf")] * n_streams
    before = [0.0] * len(heads)
    delay_of = [0.0] * len(heads)
    delay, gi, n_groups = 0.0, 0, len(heads)
    waits = wait_at.tolist()
    for k in range(len(waits) + 1):
        while gi < n_groups and g_seg[gi] == k:
            s = g_stream[gi]
            before[gi], delay_of[gi] = streams_end[s], delay
            streams_end[s] = max(streams_end[s] + g_q[gi], delay + g_a[gi])
            gi += 1
        if k < len(waits):
            delay = max(delay, max(streams_end) - waits[k])
            delays[k + 1] = delay
    ends = np.maximum(np.array(before)[group] + q_in, np.array(delay_of)[group] + alpha)
    out = np.empty(n)
    out[order] = ends
    return out, delays


def _outcome(
    tl: Timeline,
    starts: np.ndarray,
    ends: np.ndarray,
    t_a: float,
    t_b: float,
    steps: int,
    scaled: np.ndarray,
    clock: np.ndarray,
    waits: np.ndarray,
    delays: np.ndarray,
    wait_clock: np.ndarray,
) -> Outcome:
    """The replay measured over simulated ``[t_a, t_b)``: GPU busy time and the host's
    causes while the GPU was idle."""
    a, b = int(np.floor(t_a)), int(np.ceil(t_b))
    if b <= a:
        return Outcome(0, 0, steps, {})
    busy = iv.clip(
        iv.union(np.floor(starts).astype(np.int64), np.ceil(ends).astype(np.int64)), a, b
    )
    idle = iv.complement(busy, a, b)
    # host segments on the simulated clock: shifted by the delay of the syncs before them
    k = np.searchsorted(waits, tl.seg_start, side="right")
    h0 = clock[:-1] + delays[k]
    h1 = h0 + scaled
    off: dict[int, int] = {}
    pieces = [(h0, h1, tl.seg_cause)]
    pieces.append(
        (wait_clock + delays[:-1], wait_clock + delays[1:], np.full(len(waits), Cause.H_WAIT_GPU))
    )
    s = np.concatenate([p[0] for p in pieces])
    e = np.concatenate([p[1] for p in pieces])
    c = np.concatenate([p[2] for p in pieces]).astype(np.int64)
    # the host's pieces do not overlap: the idle time in each is a difference of the
    # running idle total at its ends
    edges = np.concatenate(([0.0], np.cumsum((idle.ends - idle.starts).astype(np.float64))))

    def idle_until(t: np.ndarray) -> np.ndarray:
        j = np.searchsorted(idle.starts, t, side="right") - 1
        inside = np.clip(t - idle.starts[np.maximum(j, 0)], 0, None)
        inside = np.minimum(inside, (idle.ends - idle.starts)[np.maximum(j, 0)])
        return np.where(j >= 0, edges[np.maximum(j, 0)] + inside, 0.0)

    if not len(idle):
        return Outcome(b - a, busy.measure(), steps, {})
    ns = np.bincount(c, weights=idle_until(e) - idle_until(s), minlength=len(Cause))
    off = {int(x): round(ns[x]) for x in OFF_CAUSES if ns[x] >= 1}
    return Outcome(b - a, busy.measure(), steps, off)
