"""The replay source: a recording played back through the same model and views as live."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import numpy as np

from gtop.analysis.window.active_window import Window
from gtop.core.hub import Entity, Update
from gtop.core.status import Status
from gtop.recordings.clipped import active, choose
from gtop.recordings.reader import Recording

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


DEFINITIONS = frozenset({"stack", "kernel_name"})
"""Entity kinds that say what an id means (a stack's frames, a kernel's name), not how
something stood at a time: a replay has them from its first frame, as a report over the
whole file does. (Host stacks are interned when their samples are resolved, which can be
seconds after the samples that name them: a replay 9 s into a DataLoader run had no
frames for its off-CPU time, and its verdict missed "waiting for input data".)"""


EVENT_STREAMS = frozenset({"api", "cpu_sample"})
"""Short events (API calls, a million a second on a launch-bound CUPTI recording; stack
samples): a seek reads them only over the views' window (:attr:`ReplaySource.detail_ns`)."""
DETAIL_S = 18.0
"""How far before the views' end a seek reads :data:`EVENT_STREAMS` (beyond the report's
window, when it is longer): the views' sliding window (10 s, 1 s lag), the attribution
engine's 2 s for the calls of queued ops, and 5 s for calls that run long."""
KEPT_SPANS = 2
"""Seeks whose rows are kept (a seek back, or End after →, reads none again)."""
BEYOND_WINDOW_NS = 7_000_000_000
""":data:`EVENT_STREAMS` read before the report's window (the engine's 2 s, and 5 s)."""
ACTIVITY_STREAMS = frozenset({"kernel", "memcpy", "memset", "sync", "thread_state", "overhead"})
"""The GPU's records and long intervals (a thread blocked for a minute starts long before
the window): a seek reads ``history_s`` of them, ending where the views' windows end."""


class ReplaySource:
    """Plays ``recording`` from its start, in recorded time scaled by :attr:`speed`.

    The playhead moves only in :meth:`poll`; :meth:`seek` and :meth:`step` ask the
    model to reset and refill the history before the new position: the last
    ``history_s`` seconds of the sampled streams (NVML, processes), and the per-event
    streams up to where the views' windows end (:meth:`views_end`), from ``detail_s``
    (:data:`EVENT_STREAMS`) or ``history_s`` (:data:`ACTIVITY_STREAMS`) before it. What a
    seek read is :attr:`loaded`: equal after two seeks means equal per-event rows.
    """

    live = False
    controls = None
    """A replay takes no probe or recording requests."""

    def __init__(
        self, recording: Recording, history_s: float = 120.0, detail_s: float = DETAIL_S
    ) -> None:
        self.recording = recording
        self.meta: dict[str, Any] = recording.meta
        self.title = f"replay {recording.path.name}"
        self.t_start, self.t_end = recording.time_range()
        self.history_ns = int(history_s * 1e9)
        self.detail_ns = int(detail_s * 1e9)
        """How far before :meth:`views_end` a seek reads :data:`EVENT_STREAMS` (and as
        far beyond the report's window's length)."""
        stat = recording.path.stat()
        self._file = (str(recording.path.resolve()), stat.st_size, stat.st_mtime_ns)
        self._kept: dict[str, dict[tuple[int, int], np.ndarray]] = {}
        """Per stream, the spans the last :data:`KEPT_SPANS` seeks read, and their rows."""
        self.loaded: tuple[object, ...] | None = None
        """The last seek's per-event read: the file, the views' end, the detail and
        history spans (equal in two sources: equal rows)."""
        self.speed = 1.0
        self.paused = False
        self.playhead = self.t_start
        self.pid: int | None = None
        """The process whose screen the UI opens first (None: the overview)."""
        self._emitted_to = self.t_start - 1
        self._need_reset = True
        self._wall = time.monotonic()

        def at(e: Entity) -> int:
            return self.t_start if e.kind in DEFINITIONS else e.t_ns

        self._entities = sorted(recording.entities(), key=at)
        self._entity_times = np.array([at(e) for e in self._entities], dtype=np.int64)
        self._reading = threading.RLock()
        """Held while :meth:`poll` reads (on the UI's worker; it may find :attr:`active`
        there) and while :meth:`stop` closes: closing the file under a read crashed the
        process (SIGSEGV in the reader's decode, seen in CI when an app quit mid-poll)."""
        self._closed = False

    # --- the report's window ------------------------------------------------------------

    @functools.cached_property
    def window(self) -> Window:
        """The window ``gtop report`` covers by default (:func:`~gtop.recordings.clipped.choose`:
        the steady state of the target's GPU work): a replay opens at its end, and the
        tabs cover it while the playhead stays there (:attr:`at_window`)."""
        with self._reading:
            return choose(self.recording)

    @functools.cached_property
    def active(self) -> Window:
        """The target's first to last GPU work (:func:`~gtop.recordings.clipped.active`):
        past its end (END, after the job), the views keep the last window with GPU work."""
        with self._reading:
            return active(self.recording)

    @property
    def window_end(self) -> int:
        """Where the playhead stands to show :attr:`window`."""
        return min(self.window.t1, self.t_end)

    @property
    def at_window(self) -> bool:
        """The playhead is at :attr:`window`'s end, or past it with no GPU work after it
        (END of a job whose steady state ran to its last GPU work: the views would end
        there anyway): the views cover that window, as ``gtop report`` does (else the
        last seconds before the playhead)."""
        if self.playhead == self.window_end:
            return True
        active = self.active
        return active.kind == "active" and self.playhead > self.window_end >= active.t1

    def views_end(self) -> int:
        """Where the views' windows end: the playhead; :attr:`window`'s end where the
        views cover it (:attr:`at_window`); or, past the target's last GPU work, that
        work's end (the views keep the last window with it)."""
        if self.at_window:
            return self.window_end
        active = self.active
        if active.kind == "active" and self.playhead > active.t1:
            return active.t1
        return self.playhead

    def to_window(self) -> None:
        """Pause at :attr:`window`'s end."""
        self.paused = True
        self.seek(self.window_end)

    def open_at_answer(self) -> None:
        """Where ``gtop replay F`` opens: paused at :attr:`window`'s end, on the target's
        process screen (its verdict line gives the report's verdict)."""
        self.to_window()
        target = (self.meta.get("target") or {}).get("pid")
        self.pid = None if target is None else int(target)

    # --- controls -----------------------------------------------------------------------

    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def faster(self) -> None:
        self.speed = next((s for s in SPEEDS if s > self.speed), SPEEDS[-1])

    def slower(self) -> None:
        self.speed = next((s for s in reversed(SPEEDS) if s < self.speed), SPEEDS[0])

    def seek(self, t_ns: int) -> None:
        self.playhead = min(max(int(t_ns), self.t_start), self.t_end)
        self._need_reset = True

    def step(self, seconds: float) -> None:
        self.seek(self.playhead + int(seconds * 1e9))

    @property
    def seek_pending(self) -> bool:
        """A seek came since the last :meth:`poll` began: the next one reads anew (what
        a poll under way reads is of a position no longer asked for)."""
        return self._need_reset

    @property
    def position_s(self) -> float:
        return (self.playhead - self.t_start) / 1e9

    @property
    def duration_s(self) -> float:
        return (self.t_end - self.t_start) / 1e9

    @property
    def at_end(self) -> bool:
        return self.playhead >= self.t_end

    # --- Source -------------------------------------------------------------------------

    def start(self) -> None:
        self._wall = time.monotonic()

    def stop(self) -> None:
        with self._reading:
            self._closed = True
            self.recording.close()

    def now_ns(self) -> int:
        return self.playhead

    def poll(self) -> Update:
        with self._reading:
            return Update() if self._closed else self._advance()

    def _advance(self) -> Update:
        wall = time.monotonic()
        if not self.paused and not self.at_end and not self._need_reset:
            advance = int((wall - self._wall) * 1e9 * self.speed)
            self.playhead = min(self.playhead + advance, self.t_end)
        self._wall = wall
        if self._need_reset:
            self._need_reset = False
            update = self._history()
            update.reset = True
        else:
            span = (self._emitted_to + 1, self.playhead)
            update = self._between(
                dict.fromkeys(self.recording.streams, span), entities_from=self._emitted_to + 1
            )
        self._emitted_to = self.playhead
        return update

    def _history(self) -> Update:
        """A seek's refill (class docstring): each stream over its own span."""
        end = self.views_end()
        detail = max(self.detail_ns, self.window.duration_ns + BEYOND_WINDOW_NS)
        self.loaded = (self._file, end, detail, self.history_ns)
        spans = {}
        for name in self.recording.streams:
            if name in EVENT_STREAMS:
                spans[name] = (end - detail, end)
            elif name in ACTIVITY_STREAMS:
                spans[name] = (end - self.history_ns, end)
            else:
                spans[name] = (self.playhead - self.history_ns, self.playhead)
        return self._between(spans, entities_from=None, reuse=True)

    def _between(
        self, spans: dict[str, tuple[int, int]], entities_from: int | None, reuse: bool = False
    ) -> Update:
        """The rows of each stream in its ``[t0, t1]`` of ``spans``, and the entities from
        ``entities_from`` (None: all) to the playhead; ``reuse``: a seek's rows of a span
        a recent seek read already are those (:data:`KEPT_SPANS`)."""
        batches = {}
        for name, (t0, t1) in spans.items():
            t0 = max(t0, self.t_start)
            if t1 < t0:
                continue
            kept = self._kept.setdefault(name, {}) if reuse else {}
            rows = kept.pop((t0, t1), None)
            if rows is None:
                rows = self.recording.read(name, t0, t1 + 1)
                rows.flags.writeable = False  # (the model's history shares it)
            if reuse:
                kept[(t0, t1)] = rows
                while len(kept) > KEPT_SPANS:
                    del kept[next(iter(kept))]
            if len(rows):
                batches[name] = rows
        hi = int(np.searchsorted(self._entity_times, self.playhead, side="right"))
        lo = (
            0
            if entities_from is None
            else int(np.searchsorted(self._entity_times, entities_from, side="left"))
        )
        entities: list[Entity] = self._entities[lo:hi]
        return Update(batches=batches, entities=entities)

    def drops(self) -> dict[str, int]:
        """Rows the recorder lost (the report's ``Drops``); the file's problems are
        :meth:`statuses`' (the report's ``Problem`` lines), not drops: most lose nothing
        (a chunk whose index disagrees with its data is read from its data). An excerpt's
        were counted over its whole source (drops carry no time)."""
        recorded = self.meta.get("drops") or {}
        when = "recorded over the whole source" if self.meta.get("excerpt") else "recorded"
        return {f"{k} ({when})": v for k, v in recorded.items() if v}

    def statuses(self) -> list[Status]:
        problems = self.recording.problems
        detail = f"{self.position_s:.1f}/{self.duration_s:.1f} s ×{self.speed:g}"
        if problems:
            more = f" (+{len(problems) - 1} more: gtop report)" if len(problems) > 1 else ""
            detail = f"⚠ problem: {problems[0]}{more}"
        return [Status("replay", ok=not problems, detail=detail)]
