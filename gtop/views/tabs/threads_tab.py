"""Process-screen tab "Threads": per-thread state bars over the window of
:func:`~gtop.views.tabs.session_data.tab_window` (the verdict line's, named in the
flamegraph's head) and an on-/off-CPU flamegraph of the same window (``o`` cycles off-CPU, on-CPU,
both), with the top functions beside it. By default only the threads that matter are
shown: those that called CUDA or were busy (:mod:`~gtop.views.tabs.thread_filter`),
never gtop's own agent thread (``t`` shows every thread). Work runs on a worker thread."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive

from gtop.analysis.host import thread_time as threads
from gtop.core import layouts
from gtop.core.model import Model, Slice
from gtop.views.tabs import absence
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import tab_window
from gtop.views.tabs.thread_filter import threads_that_matter
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.flamegraph import FlameGraph, Path
from gtop.views.widgets.thread_bars import ThreadBars

MODES = ("both", "off-CPU", "on-CPU")


@dataclass(frozen=True)
class _Snap:
    intervals: Slice | None
    samples: Slice | None
    stacks: dict[str, Any]
    names: dict[int, str]
    t0: int
    t1: int
    mode: str
    api: Slice | None
    every_thread: bool
    label: str
    """The window, named (:meth:`~gtop.views.tabs.session_data.TabWindow.label`)."""


@dataclass(frozen=True)
class _Result:
    snap: _Snap
    intervals: np.ndarray
    folded: dict[Path, float]
    shown: int
    total: int


def _mine(window: Slice | None, pid: int, empty: np.ndarray) -> np.ndarray:
    """Worker: the rows of ``pid`` in ``window``."""
    if window is None:
        return empty
    rows = window.rows()
    return rows[rows["pid"] == pid]


class ThreadsTab(WorkerPanel):
    """Thread state bars above an on/off-CPU flamegraph."""

    DEFAULT_CSS = """
    ThreadsTab > ThreadBars { max-height: 50%; }
    ThreadsTab > FlameGraph { height: 1fr; min-height: 4; }
    """

    BINDINGS = [
        Binding("o", "cycle_mode", "On/off-CPU"),
        Binding("t", "toggle_threads", "All threads"),
    ]

    mode: reactive[str] = reactive("both")
    """Which time the flamegraph shows: one of :data:`MODES`."""
    every_thread: reactive[bool] = reactive(False)
    """Show every thread, not only the ones that matter (module docstring)."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.bars = ThreadBars()
        self.flame = FlameGraph()

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.bars
        yield self.flame

    def reason(self, model: Model) -> str | None:
        return absence.threads_reason(model, self.pid, self.live())

    def snapshot(self, model: Model) -> _Snap:
        names = {int(k): str(v.get("name", "")) for k, v in model.entity_values("thread").items()}
        window = tab_window(model, self.app.source, self.pid)
        seconds = (model.now_ns - window.t0) / 1e9
        return _Snap(
            model.slice(layouts.THREAD_STATE.name, seconds),
            model.slice(layouts.CPU_SAMPLE.name, seconds),
            model.entity_values("stack"),
            names,
            window.t0,
            window.t1,
            self.mode,
            model.slice(layouts.API.name, seconds),
            self.every_thread,
            window.label(),
        )

    def compute(self, snap: _Snap) -> _Result:
        intervals = _mine(snap.intervals, self.pid, layouts.THREAD_STATE.empty())
        samples = _mine(snap.samples, self.pid, layouts.CPU_SAMPLE.empty())
        rows = threads.clip(intervals, snap.t0, snap.t1)
        samples = samples[(samples["t_ns"] >= snap.t0) & (samples["t_ns"] < snap.t1)]
        stacks = {int(k): v for k, v in snap.stacks.items()}
        total = len(np.unique(rows["tid"]))
        if not snap.every_thread:
            api = _mine(snap.api, self.pid, layouts.API.empty(0))
            matter, _ = threads_that_matter(rows, samples, api, stacks, snap.t1 - snap.t0)
            keep = list(matter)
            rows = rows[np.isin(rows["tid"], keep)]
            samples = samples[np.isin(samples["tid"], keep)]
        folded = threads.fold(
            rows,
            samples,
            stacks,
            off_cpu=snap.mode != "on-CPU",
            on_cpu=snap.mode != "off-CPU",
        )
        return _Result(snap, rows, folded, len(np.unique(rows["tid"])), total)

    def apply(self, result: _Result) -> None:
        snap = result.snap
        self.bars.window_s = (snap.t1 - snap.t0) / 1e9
        self.bars.show(result.intervals, snap.names, snap.t1)
        self.flame.folded = result.folded
        which = "all" if snap.every_thread else "calling CUDA or busy"
        self.flame.total_label = (
            f"{snap.mode} · {result.shown} of {result.total} threads ({which}; t) · {snap.label}:"
        )

    def action_cycle_mode(self) -> None:
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]

    def action_toggle_threads(self) -> None:
        self.every_thread = not self.every_thread

    def watch_mode(self) -> None:
        self.recompute()

    def watch_every_thread(self) -> None:
        self.watch_mode()


PANEL = PanelSpec(
    "Threads",
    ThreadsTab,
    order=50,
    about=(
        "What the process's host threads did: a bar per thread (on a CPU, runnable, blocked "
        "and why), and a flamegraph of where their time went (o: on-CPU, off-CPU or both) "
        "with the top functions beside it."
    ),
)
