"""Aggregates the process-screen tabs share, kept up to date batch by batch.

One :class:`SessionData` per :class:`~gtop.core.model.Model` (see :func:`session_of`).
It listens to ``model.listeners``, so every batch is aggregated once as it arrives (never
by re-scanning the history each frame), and to ``model.reset_listeners``, so a replay
seek starts it afresh. Live and replay feed it the same way: it only sees model batches.

It holds:

* per pid, a :class:`~gtop.analysis.kernels.cuda_activity.KernelStats` (the palette's kernel
  commands) and the span its kernels cover (where its GPU work begins and ends);
* one :class:`~gtop.analysis.attribution.sliding_window.AttributionEngine` over every CUPTI and
host stream it
  reads (GPU time and swimlanes tabs), which keeps only its sliding window.

When it is first made, it is seeded once from the model's current history, so a tab
opened late starts complete with what the model still holds.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from gtop.analysis.attribution.records import Records, mark_comm
from gtop.analysis.attribution.sliding_window import AttributionEngine
from gtop.analysis.distributed.collectives import comm_name
from gtop.analysis.kernels.cuda_activity import KernelStats
from gtop.analysis.window.active_window import Window
from gtop.core import layouts
from gtop.core.hub import Update
from gtop.core.model import Model

WINDOW_NS = 10_000_000_000
"""Longest window the GPU time and swimlanes tabs attribute."""
LAG_NS = 1_000_000_000
"""Live, attributed windows end this long before now: CUPTI delivers its records late
(a replay has every record up to its playhead, so its windows end there)."""
ENGINE_STREAMS = frozenset(
    {
        layouts.KERNEL.name,
        layouts.MEMCPY.name,
        layouts.MEMSET.name,
        layouts.API.name,
        layouts.SYNC.name,
        layouts.THREAD_STATE.name,
        layouts.CPU_SAMPLE.name,
        layouts.UNTRACED.name,
    }
)


def window_end(model: Model, live: bool) -> tuple[int, int]:
    """``(t1, lag_ns)``: where the tabs' windows end, and how far before the newest data
    (the axis labels it): a replay's playhead, or :data:`LAG_NS` before now live."""
    lag = LAG_NS if live else 0
    return model.now_ns - lag, lag


@dataclass(frozen=True)
class TabWindow:
    """The window the verdict line and the tabs cover (:func:`tab_window`)."""

    t0: int
    t1: int
    lag_ns: int
    """How far before the newest data it ends (live: :data:`LAG_NS`)."""
    origin: int | None
    """A replay's recording start (labels are seconds from it); None live."""
    kind: str | None = None
    """``steady``/``active``/``recording``: the report's window (the replay stands at
    its end); None: the last seconds before the playhead, or before now live."""
    after: bool = False
    """The playhead is past the last GPU work: the window is the last one with it."""

    def label(self, t0: int | None = None, t1: int | None = None) -> str:
        """Its name as every view writes it (``steady 4.4–8.3 s``, ``8.0–18.0 s`` in a
        replay, ``last 10 s`` live), for ``[t0, t1)`` inside it when a tab cut it (a
        process's first kernel, its exit)."""
        a, b = self.t0 if t0 is None else t0, self.t1 if t1 is None else t1
        if self.origin is None:
            return f"last {(b - a) / 1e9:.3g} s"
        label = Window(a, b, self.kind or "given").label(self.origin)
        return f"{label}, to the last GPU work" if self.after else label


def tab_window(model: Model, source: Any, pid: int | None = None) -> TabWindow:
    """The one window rule of the process screen (verdict line, GPU time, Swimlanes,
    Ranks): a replay standing at the end of the report's window, or past it with no GPU
    work after it (:attr:`~gtop.session.replay.ReplaySource.at_window`: where it opens,
    and END) covers that window, as ``gtop report`` does; elsewhere the last
    :data:`WINDOW_NS` before the playhead, or, past the target's last GPU work, before
    that work's end (the tabs keep the last window that had it); live, the last
    :data:`WINDOW_NS` ending :data:`LAG_NS` before now. A last-seconds window of process
    ``pid`` starts no earlier than the first GPU work of it or its descendants (its
    startup is not idle GPU). The report's window comes from
    :func:`gtop.recordings.clipped.choose`, the one place that chooses it."""
    live = bool(getattr(source, "live", True))
    t1, lag = window_end(model, live)
    if live:
        return TabWindow(_after_start(model, pid, t1 - WINDOW_NS, t1), t1, lag, None)
    origin = int(source.t_start)
    if source.at_window:  # (past the GPU work too: the report's window ends at its end)
        window = source.window
        session_of(model).hold(window.duration_ns)
        lag = max(model.now_ns - window.t1, 0)
        return TabWindow(window.t0, window.t1, lag, origin, window.kind)
    end = source.views_end()
    after = end < t1  # after the GPU work: its last window
    if after:  # (it ends before the playhead: the axes do not call its end "now")
        t1, lag = end, model.now_ns - end
    t0 = _after_start(model, pid, max(origin, t1 - WINDOW_NS), t1)
    return TabWindow(t0, t1, lag, origin, after=after)


def recent_label(model: Model, source: Any, seconds: float) -> str:
    """The last ``seconds`` before the newest data, named as the tabs name a window
    (``last 5 s, 8.8–13.8 s`` in a replay, ``last 5 s`` live): the NVML tables' window."""
    last = f"last {seconds:g} s"
    if bool(getattr(source, "live", True)):
        return last
    t0 = max(int(source.t_start), model.now_ns - int(seconds * 1e9))
    return f"{last}, {Window(t0, model.now_ns, 'given').label(int(source.t_start))}"


def _after_start(model: Model, pid: int | None, t0: int, t1: int) -> int:
    """``t0``, or the first GPU work of ``pid`` and its descendants when that lies
    inside ``[t0, t1)``."""
    if pid is None:
        return t0
    spans = session_of(model).kernel_span
    firsts = [spans[p][0] for p in family(model.entity_values("process"), pid) if p in spans]
    first = min(firsts, default=t0)
    return first if t0 < first < t1 else t0


def family(processes: Mapping[str, Mapping[str, Any]], pid: int) -> frozenset[int]:
    """``pid`` and its descendants, from ``process`` entities' ``ppid``."""
    children: dict[int, list[int]] = {}
    for key, value in processes.items():
        parent = value.get("ppid")
        if parent is not None:
            children.setdefault(int(parent), []).append(int(key))
    out, todo = {pid}, [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return frozenset(out)


class SessionData:
    """Incremental aggregates of one model (module docstring)."""

    def __init__(self, model: Model) -> None:
        self._model = weakref.ref(model)
        self.kernels: dict[int, KernelStats] = {}
        """Kernel totals per pid, since the session (or the last seek) began."""
        self.pids_seen: dict[str, set[int]] = {}
        """Per stream, the pids with rows in it (the tabs' "why is this empty" lines ask)."""
        self.kernel_span: dict[int, tuple[int, int]] = {}
        """Per pid, the first kernel's start and the last one's end seen so far."""
        self.span_ns = WINDOW_NS + LAG_NS
        """The longest window the engine holds (:meth:`hold`)."""
        self.engine = AttributionEngine(self.span_ns)
        self.generation = 0
        """Bumped on every reset, so tabs can drop what they derived before it."""
        self.batches = 0
        """Batches aggregated so far (a cheap change counter)."""
        self._comm: dict[int, bool] = {}
        """Kernel name id -> whether it names a communication (NCCL) kernel."""
        self.token: Hashable | None = None
        """What the aggregates were built from, when a replay's seek says so (its
        ``loaded``: equal tokens, equal rows): results over them may be reused. None once
        rows arrive batch by batch (live, a replay playing)."""
        self._stash: tuple[Hashable, tuple[Any, ...]] | None = None
        """The aggregates before the last seek, with their token (:meth:`reusable`)."""
        self._want: Hashable | None = None
        self._fresh: SessionData | None = None
        """Aggregates of the next reset's batches, built off the UI thread (:meth:`taking`)."""
        self._taken = False
        """The batches now being applied are already in the aggregates."""
        self._seed(model)

    def _seed(self, model: Model) -> None:
        lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        batches = {name: hist.window(lo, hi) for name, hist in model.streams.items()}
        for name, batch in batches.items():
            if len(batch):
                self.on_batch(name, batch)

    def on_batch(self, name: str, batch: np.ndarray) -> None:
        """Aggregate one new batch (called by the model for every batch it applies)."""
        if self._taken:
            return
        if len(batch) and batch.dtype.names and "pid" in batch.dtype.names:
            pids = batch["pid"]
            seen = self.pids_seen.setdefault(name, set())
            if not (pids == pids[0]).all():
                seen.update(np.unique(pids).tolist())
            else:
                seen.add(int(pids[0]))
        if name not in ENGINE_STREAMS or not len(batch):
            return
        self.token = None
        self.batches += 1
        if name == layouts.KERNEL.name:
            pids = batch["pid"]
            if len(pids) and bool((pids == pids[0]).all()):
                self._add_kernels(int(pids[0]), batch)
            else:
                for pid in np.unique(pids).tolist():
                    self._add_kernels(int(pid), batch[pids == pid])
        self._feed_engine(name, batch)

    def _feed_engine(self, name: str, batch: np.ndarray) -> None:
        records = Records.from_streams({name: batch})
        if name == layouts.KERNEL.name:
            mark_comm(records.ops, self._comm_ids(batch["name_id"]))
        self.engine.feed_records(records)

    def _comm_ids(self, name_ids: np.ndarray) -> np.ndarray:
        """The communication kernels' name ids among ``name_ids`` (names looked up once,
        in the model's ``kernel_name`` entities, which arrive before their kernels)."""
        model = self._model()
        names = model.entities.get("kernel_name", {}) if model is not None else {}
        for nid in np.unique(name_ids).tolist():
            if nid not in self._comm and str(nid) in names:
                self._comm[nid] = comm_name(names[str(nid)].value.get("name", "")) is not None
        return np.array([n for n, is_comm in self._comm.items() if is_comm], np.int64)

    def _add_kernels(self, pid: int, batch: np.ndarray) -> None:
        self.kernels.setdefault(pid, KernelStats()).add(batch)
        lo, hi = int(batch["t_ns"].min()), int(batch["end_ns"].max())
        old = self.kernel_span.get(pid)
        self.kernel_span[pid] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))

    def on_reset(self) -> None:
        """Forget everything (a replay seek): the model refills its history next (or take
        the aggregates of that history, built already: :meth:`taking`)."""
        fresh, self._fresh = self._fresh, None
        if fresh is self and self._reuse():
            self._taken = True
            self.generation += 1
            return
        if self.token is not None:  # unchanged since built: a seek back may take them
            self._stash = (self.token, self._parts())
        if fresh is not None and fresh is not self:
            self._comm.update(fresh._comm)
            self.batches += fresh.batches
            self._set(fresh.token, fresh._parts())
            self.span_ns = max(self.span_ns, fresh.span_ns)
            self._taken = True
        else:
            self._set(None, ({}, {}, {}, AttributionEngine(self.span_ns)))
        self.generation += 1

    def _parts(self) -> tuple[Any, ...]:
        return self.kernels, self.kernel_span, self.pids_seen, self.engine

    def _set(self, token: Hashable | None, parts: tuple[Any, ...]) -> None:
        self.token = token
        self.kernels, self.kernel_span, self.pids_seen, self.engine = parts

    def reusable(self, token: Hashable | None) -> bool:
        """A seek that read ``token`` finds its aggregates here already (those shown, or
        the ones before the last seek, unchanged since)."""
        stashed = self._stash[0] if self._stash is not None else None
        return token is not None and token in (self.token, stashed)

    def _reuse(self) -> bool:
        """Take the aggregates :meth:`taking`'s token names (:meth:`reusable`)."""
        want, self._want = self._want, None
        if want is None:
            return False
        if want == self.token:
            return True
        if self._stash is not None and self._stash[0] == want:
            current = (self.token, self._parts())
            self._set(*self._stash)
            self._stash = current if current[0] is not None else None
            return True
        return False

    def hold(self, span_ns: int) -> None:
        """Keep windows of ``span_ns`` (a replay's steady window may be longer than
        :data:`WINDOW_NS`): the engine grows once, refed from the model's history."""
        if span_ns <= self.span_ns:
            return
        self.span_ns = span_ns
        self.token = None if self.token is None else (self.token, span_ns)
        self.engine = AttributionEngine(span_ns)
        model = self._model()
        if model is not None:
            lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
            for name in ENGINE_STREAMS & set(model.streams):
                batch = model.streams[name].window(lo, hi)
                if len(batch):
                    self._feed_engine(name, batch)

    @contextmanager
    def taking(self, fresh: SessionData | None, token: Hashable | None = None) -> Iterator[None]:
        """While the model applies a reset update: take ``fresh`` (:func:`aggregated` of
        that update; itself: the aggregates of ``token``, :meth:`reusable`) instead of
        aggregating its batches again on this thread."""
        self._fresh, self._want = fresh, token
        try:
            yield
        finally:
            self._fresh = self._want = None
            self._taken = False

    def snapshot(self) -> Records:
        """The engine's rows now, safe to read from a worker thread (never mutated)."""
        return self.engine.records()


def aggregated(
    update: Update,
    now_ns: int,
    span_ns: int = WINDOW_NS + LAG_NS,
    token: Hashable | None = None,
) -> SessionData:
    """Worker thread: the aggregates of a model that applied the reset ``update`` (a
    seek's history: ~0.2-0.4 s of work on a CUPTI recording, which held the UI thread),
    compacted, for :meth:`SessionData.taking`, holding windows of ``span_ns``
    (:meth:`SessionData.hold`), with the replay's ``token`` for what it read. Built on a
    model of its own."""
    model = Model()
    data = SessionData(model)
    data.hold(span_ns)
    model.listeners.append(data.on_batch)
    model.apply(update, now_ns)
    data.engine.records()
    data.token = token
    return data


_SESSIONS: weakref.WeakKeyDictionary[Model, SessionData] = weakref.WeakKeyDictionary()


def session_of(model: Model) -> SessionData:
    """The model's :class:`SessionData`, made (and hooked to the model) on first use."""
    data = _SESSIONS.get(model)
    if data is None:
        data = _SESSIONS[model] = SessionData(model)
        model.listeners.append(data.on_batch)
        model.reset_listeners.append(data.on_reset)
    return data
