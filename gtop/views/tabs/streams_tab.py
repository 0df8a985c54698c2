"""Process-screen tab "Streams": the focused process's CUDA streams over a recent window
(:class:`~gtop.views.widgets.stream_timeline.StreamTimeline`; ``+``/``-`` zoom the window)."""

from __future__ import annotations

import numpy as np
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gtop.core import layouts
from gtop.core.model import Model
from gtop.views.tabs import absence
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import LAG_NS, tab_window
from gtop.views.tabs.worker_panel import agent_error_of, is_live
from gtop.views.widgets.stream_timeline import StreamTimeline

MAX_ROWS = 200_000
"""Most records per kind handed to the timeline in one frame (the newest are kept), so a
frame stays cheap at 100k records/s even over a long window."""


def _mine(model: Model, stream: str, seconds: float, pid: int, empty: np.ndarray) -> np.ndarray:
    rows = model.window(stream, seconds)
    if rows is None:
        return empty
    rows = rows[rows["pid"] == pid]
    return rows[-MAX_ROWS:]


class StreamsTab(Vertical):
    """The stream timeline, or one line saying why there is none."""

    DEFAULT_CSS = """
    StreamsTab { height: 1fr; }
    StreamsTab > .panel-note { height: auto; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.note = Static("", classes="panel-note")
        self.timeline = StreamTimeline()
        self._model: Model | None = None

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.timeline

    def on_mount(self) -> None:
        self.watch(self.timeline, "window_ns", self._rezoomed, init=False)

    def show(self, model: Model) -> None:
        self._model = model
        why = absence.cuda_reason(model, self.pid, agent_error_of(self.app), is_live(self.app))
        self.note.update(why or "")
        self.note.display = why is not None
        self.timeline.display = why is None
        if why is not None:
            return
        window = tab_window(model, self.app.source, self.pid)  # (its end: the line's window's)
        t1, lag = window.t1, window.lag_ns
        seconds = (model.now_ns - t1 + self.timeline.window_ns + LAG_NS) / 1e9
        self.timeline.origin = window.origin
        self.timeline.set_activity(
            _mine(model, layouts.KERNEL.name, seconds, self.pid, layouts.KERNEL.empty(0)),
            _mine(model, layouts.MEMCPY.name, seconds, self.pid, layouts.MEMCPY.empty(0)),
            _mine(model, layouts.MEMSET.name, seconds, self.pid, layouts.MEMSET.empty(0)),
            t1,
            lag,
            # an off phase lasts under a second: a second more holds every one in view
            _mine(model, layouts.UNTRACED.name, seconds + 1, self.pid, layouts.UNTRACED.empty(0)),
        )

    def _rezoomed(self) -> None:
        if self._model is not None:
            self.show(self._model)


PANEL = PanelSpec(
    "Streams",
    StreamsTab,
    order=40,
    about=(
        "One row per CUDA stream over a recent window. Each cell's height is the share of "
        "that slice the stream was busy (▁ a little, █ all of it), its colour the kind of "
        "work (kernel, copy, memset); the % on the right is the stream's busy share of the "
        "whole window."
    ),
)
