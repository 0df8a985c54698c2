"""The stream timeline: one row per CUDA stream over a recent window, kernels and copies
drawn by kind, with each stream's busy share of the window."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.core import layouts
from gtop.core.layouts import CopyKind
from gtop.views.fmt import units

LABEL = 10
BUSY = 6
MIN_WINDOW_NS = 1_000_000
MAX_WINDOW_NS = 60_000_000_000
# drawn in this order: later kinds overwrite earlier ones in a shared cell
KINDS: tuple[tuple[str, str, str], ...] = (
    ("memset", "░", "yellow"),
    ("copy", "▒", "blue"),
    ("htod", "▒", "cyan"),
    ("dtoh", "▒", "magenta"),
    ("kernel", "█", "green"),
)


def cells(t0: int, t1: int, width: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which of ``width`` equal cells spanning ``[t0, t1)`` the intervals touch."""
    out = np.zeros(width, dtype=bool)
    keep = (ends > t0) & (starts < t1) & (ends >= starts)
    if width <= 0 or not keep.any():
        return out
    span = (t1 - t0) / width
    first = np.clip(((starts[keep] - t0) / span).astype(np.int64), 0, width - 1)
    last = np.ceil((ends[keep] - t0) / span).astype(np.int64) - 1  # half-open intervals
    last = np.clip(np.maximum(last, first), 0, width - 1)
    diff = np.zeros(width + 1, dtype=np.int64)
    np.add.at(diff, first, 1)
    np.add.at(diff, last + 1, -1)
    return np.cumsum(diff[:-1]) > 0


def busy_fraction(t0: int, t1: int, starts: np.ndarray, ends: np.ndarray) -> float:
    """Share of ``[t0, t1)`` covered by the union of the intervals."""
    s = np.clip(starts, t0, t1)
    e = np.clip(ends, t0, t1)
    keep = e > s
    if not keep.any():
        return 0.0
    order = np.argsort(s[keep])
    s, e = s[keep][order], e[keep][order]
    reach = np.maximum.accumulate(e)
    gaps = np.maximum(s[1:] - reach[:-1], 0).sum()
    return float((reach[-1] - s[0] - gaps) / (t1 - t0))


class StreamTimeline(Widget, can_focus=True):
    """Recent GPU activity per (process, stream); data arrives through
    :meth:`set_activity`, the widget only draws it."""

    DEFAULT_CSS = """
    StreamTimeline { height: auto; min-height: 4; border: round $primary; }
    """

    BINDINGS = [
        Binding("plus", "zoom_in", "Zoom in"),
        Binding("minus", "zoom_out", "Zoom out"),
    ]

    window_ns: reactive[int] = reactive(1_000_000_000)
    """Width of the window shown, ending at the newest data."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._kernels = layouts.KERNEL.empty(0)
        self._memcpy = layouts.MEMCPY.empty(0)
        self._memset = layouts.MEMSET.empty(0)
        self._now_ns = 0

    def set_activity(
        self, kernels: np.ndarray, memcpy: np.ndarray, memset: np.ndarray, now_ns: int
    ) -> None:
        """The records to draw (at least the last window's) and the window's end."""
        self._kernels, self._memcpy, self._memset = kernels, memcpy, memset
        self._now_ns = now_ns
        self.refresh(layout=True)

    def watch_window_ns(self) -> None:
        self.border_title = f"streams, last {units.duration(self.window_ns)}"
        self.refresh()

    def action_zoom_in(self) -> None:
        self.window_ns = max(MIN_WINDOW_NS, self.window_ns // 2)

    def action_zoom_out(self) -> None:
        self.window_ns = min(MAX_WINDOW_NS, self.window_ns * 2)

    def _streams(self) -> list[tuple[int, int]]:
        keys: set[tuple[int, int]] = set()
        for arr in (self._kernels, self._memcpy, self._memset):
            keys.update(zip(arr["pid"].tolist(), arr["stream"].tolist(), strict=True))
        return sorted(keys)

    def get_content_height(self, _container: object, _viewport: object, width: int) -> int:
        return max(1, len(self._streams())) + 1

    def render(self) -> Text:
        t1 = self._now_ns
        t0 = t1 - self.window_ns
        width = max(1, self.size.width - LABEL - BUSY)
        streams = self._streams()
        pids = {pid for pid, _ in streams}
        out = Text(no_wrap=True, overflow="crop")
        if not streams:
            out.append("no kernels or copies in this window", style="dim")
        for pid, stream in streams:
            label = f"s{stream}" if len(pids) == 1 else f"{pid}:s{stream}"
            out.append(f"{label[: LABEL - 1]:<{LABEL}}", style="bold")
            glyph = np.full(width, "·", dtype="<U1")
            style = np.full(width, "dim", dtype="<U8")
            starts, ends = [], []
            for kind, char, colour in KINDS:
                arr = self._of_kind(kind, pid, stream)
                mark = cells(t0, t1, width, arr["t_ns"], arr["end_ns"])
                glyph[mark], style[mark] = char, colour
                starts.append(arr["t_ns"])
                ends.append(arr["end_ns"])
            for ch, st in zip(glyph.tolist(), style.tolist(), strict=True):
                out.append(ch, style=st)
            busy = busy_fraction(t0, t1, np.concatenate(starts), np.concatenate(ends))
            out.append(f"{100 * busy:5.0f}%\n")
        out.append(f"{'':<{LABEL}}-{units.duration(self.window_ns)}", style="dim")
        out.append("   ")
        for kind, char, colour in KINDS[::-1]:
            out.append(f"{char} {kind} ", style=colour)
        return out

    def _of_kind(self, kind: str, pid: int, stream: int) -> np.ndarray:
        if kind == "kernel":
            arr = self._kernels
        elif kind == "memset":
            arr = self._memset
        else:
            arr = self._memcpy
            direction = {"htod": CopyKind.HTOD, "dtoh": CopyKind.DTOH}.get(kind)
            if direction is None:
                other = (arr["copy_kind"] != CopyKind.HTOD) & (arr["copy_kind"] != CopyKind.DTOH)
                arr = arr[other]
            else:
                arr = arr[arr["copy_kind"] == direction]
        return arr[(arr["pid"] == pid) & (arr["stream"] == stream)]
