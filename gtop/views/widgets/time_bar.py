"""The replay time bar: play state, position / duration, progress (the report's window
marked on it) and speed."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from gtop.views.fmt import values as fmt

FILLED, EMPTY, WINDOW, WINDOW_PLAYED = "█", "░", "▒", "▓"
"""Played, to play, and the report's window (where the activity is) to play and played:
marked by shape, so that it reads without colour too."""
LOADING = "computing…"


@dataclass(frozen=True)
class Playback:
    """Where a replay stands."""

    position_s: float
    duration_s: float
    speed: float
    paused: bool
    at_end: bool
    loading: bool = False
    """A seek's history is being read: the bar says so (:data:`LOADING`)."""
    window: tuple[float, float] | None = None
    """The report's window (the steady state of the GPU work) as fractions of the
    recording, marked on the bar (``w`` goes there)."""
    at_window: bool = False
    """The playhead stands at that window's end: the tabs cover it."""


class TimeBar(Widget):
    """``⏸ 0:12.5 / 1:05.0 ████████░░░░░░░░ ×2`` — click on the bar to seek there."""

    DEFAULT_CSS = """
    TimeBar { height: 1; padding: 0 1; background: $boost; }
    TimeBar > .time-bar--done { color: $accent; }
    TimeBar > .time-bar--todo { color: $text-muted; }
    TimeBar > .time-bar--state { text-style: bold; }
    TimeBar > .time-bar--window { color: $warning; }
    """

    COMPONENT_CLASSES = {"time-bar--done", "time-bar--todo", "time-bar--state", "time-bar--window"}

    playback: reactive[Playback | None] = reactive(None, layout=False)
    """The replay's state; set by the app on every tick."""

    class Seek(Message):
        """The user clicked the bar at ``fraction`` (0…1) of the recording."""

        def __init__(self, fraction: float) -> None:
            super().__init__()
            self.fraction = fraction

    _HELP = "  space ,. ←→ -+"

    def _layout(self, pb: Playback) -> tuple[Text, int, Text]:
        """Head text, bar width and tail text for the current size."""
        state = "■ END" if pb.at_end else ("⏸ PAUSE" if pb.paused else "▶ PLAY")
        head = Text.assemble(
            (state, self.get_component_rich_style("time-bar--state", partial=True)),
            f" {fmt.clock(pb.position_s)} / {fmt.clock(pb.duration_s)} ",
        )
        if pb.loading:
            head.append(f"{LOADING} ", style=self.get_component_rich_style("time-bar--state"))
        tail = Text(f" ×{pb.speed:g}")
        width = self.content_size.width
        if width - head.cell_len - tail.cell_len - len(self._HELP) >= 20:
            tail.append(self._HELP, style=self.get_component_rich_style("time-bar--todo"))
        return head, max(4, width - head.cell_len - tail.cell_len), tail

    def render(self) -> Text:
        pb = self.playback
        if pb is None:
            return Text()
        head, bar_w, tail = self._layout(pb)
        frac = 0.0 if pb.duration_s <= 0 else min(1.0, pb.position_s / pb.duration_s)
        done = round(frac * bar_w)
        lo, hi = bar_w, bar_w
        if pb.window is not None:  # at least one cell, however short the window
            lo = min(bar_w - 1, int(pb.window[0] * bar_w))
            hi = max(lo + 1, round(pb.window[1] * bar_w))
        styles = {
            c: self.get_component_rich_style(f"time-bar--{c}", partial=True)
            for c in ("done", "todo", "window")
        }
        bar = Text()
        for i in range(bar_w):
            inside = lo <= i < hi
            if i < done:
                bar.append(
                    WINDOW_PLAYED if inside else FILLED, styles["window" if inside else "done"]
                )
            else:
                bar.append(WINDOW if inside else EMPTY, styles["window" if inside else "todo"])
        return Text.assemble(head, bar, tail)

    def on_click(self, event: events.Click) -> None:
        if self.playback is None:
            return
        head, bar_w, _ = self._layout(self.playback)
        x = event.x - self.styles.padding.left - head.cell_len
        if 0 <= x < bar_w:
            self.post_message(self.Seek(x / max(1, bar_w - 1)))
