"""The stream timeline: one row per CUDA stream over a recent window, each cell's height
its busy share (:mod:`gtop.views.fmt.busy`), coloured by the kind of work that held it,
with each stream's busy share of the window."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import untraced
from gtop.analysis.attribution.causes import Cause
from gtop.core import layouts
from gtop.core.layouts import CopyKind
from gtop.views.fmt import busy, units
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE

LABEL = 10
BUSY = 6
MIN_WINDOW_NS = 1_000_000
MAX_WINDOW_NS = 60_000_000_000
KINDS: tuple[tuple[str, str], ...] = (
    ("kernel", "green"),
    ("copy", "blue"),
    ("htod", "cyan"),
    ("dtoh", "magenta"),
    ("memset", "yellow"),
)
"""Kinds of GPU work, by code (their index); the colour of a cell they held longest."""
IDLE = len(KINDS)
"""The code of a stream's idle time (quiet: it colours only a wholly idle cell)."""
NOT_TRACED = IDLE + 1
"""The code of time kernel sampling traced nothing in: neither busy nor idle."""
STYLES = {**{i: colour for i, (_, colour) in enumerate(KINDS)}, IDLE: "grey50"}
STYLES[NOT_TRACED] = CAUSE_STYLE[Cause.NOT_TRACED]
LETTERS = {IDLE: "·", NOT_TRACED: CAUSE_GLYPH[Cause.NOT_TRACED]}
BUSY_MASK = np.arange(NOT_TRACED + 1) < IDLE
QUIET_MASK = np.arange(NOT_TRACED + 1) == IDLE
UNSEEN_MASK = np.arange(NOT_TRACED + 1) == NOT_TRACED


def busy_fraction(
    t0: int, t1: int, starts: np.ndarray, ends: np.ndarray, off: iv.Spans = iv.EMPTY
) -> float:
    """Share of ``[t0, t1)`` less ``off`` (untraced) covered by the union of the
    intervals (0 when all of it is untraced)."""
    traced = iv.subtract(iv.complement(iv.EMPTY, t0, t1), iv.clip(off, t0, t1))
    spans = iv.intersect(iv.clip(iv.union(starts, ends), t0, t1), traced)
    return spans.measure() / traced.measure() if len(traced) else 0.0


def stream_cells(
    t0: int,
    t1: int,
    width: int,
    starts: np.ndarray,
    ends: np.ndarray,
    codes: np.ndarray,
    off: iv.Spans = iv.EMPTY,
) -> busy.Cells:
    """Cells of one stream's work (``codes``: index into :data:`KINDS`); time in ``off``
    (untraced) is :data:`NOT_TRACED`, the rest with no work :data:`IDLE`."""
    off = iv.clip(off, t0, t1)
    idle = iv.subtract(iv.complement(iv.union(starts, ends), t0, t1), off)
    return busy.busy_cells(
        np.concatenate((starts, idle.starts, off.starts)),
        np.concatenate((ends, idle.ends, off.ends)),
        np.concatenate(
            (codes, np.full(len(idle.starts), IDLE), np.full(len(off.starts), NOT_TRACED))
        ),
        NOT_TRACED + 1,
        busy.cell_edges(t0, t1, width),
        BUSY_MASK,
        QUIET_MASK,
        UNSEEN_MASK,
    )


def _stream_keys(*arrays: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (pid, stream) pairs of the records, sorted (pids are 32-bit signed,
    streams 32-bit unsigned: one 64-bit key each)."""
    keys = np.concatenate(
        [(a["pid"].astype(np.int64) << 32) | a["stream"].astype(np.int64) for a in arrays]
    )
    return [(int(k >> 32), int(k & 0xFFFFFFFF)) for k in np.unique(keys).tolist()]


class StreamTimeline(Widget, can_focus=True):
    """Recent GPU activity per (process, stream); data arrives through
    :meth:`set_activity`, the widget only draws it."""

    DEFAULT_CSS = """
    StreamTimeline { height: auto; min-height: 4; border: round $primary; }
    """

    BINDINGS = [
        Binding("z", "zoom_in", "Zoom in"),
        Binding("x", "zoom_out", "Zoom out"),
    ]

    window_ns: reactive[int] = reactive(1_000_000_000)
    """Width of the window shown, ending at the newest data."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._kernels = layouts.KERNEL.empty(0)
        self._memcpy = layouts.MEMCPY.empty(0)
        self._memset = layouts.MEMSET.empty(0)
        self._off: dict[int, iv.Spans] = {}
        self._now_ns = 0
        self._lag_ns = 0
        self._keys: list[tuple[int, int]] = []
        self.origin: int | None = None
        """A replay's recording start: the title says which seconds it shows."""

    def set_activity(
        self,
        kernels: np.ndarray,
        memcpy: np.ndarray,
        memset: np.ndarray,
        now_ns: int,
        lag_ns: int = 0,
        off: np.ndarray | None = None,
    ) -> None:
        """The records to draw (at least the last window's) and the window's end, which
        lies ``lag_ns`` before the newest time (for the axis); ``off``: ``untraced``
        rows (kernel sampling's off phases) over the window."""
        self._kernels, self._memcpy, self._memset = kernels, memcpy, memset
        rows = untraced.from_stream(off if off is not None else layouts.UNTRACED.empty(0))
        self._off = untraced.spans_by_pid(rows, now_ns)
        self._now_ns, self._lag_ns = now_ns, lag_ns
        self._keys = _stream_keys(kernels, memcpy, memset)
        self._title()
        self.refresh(layout=True)

    def _title(self) -> None:
        title = f"streams, last {units.duration(self.window_ns)}"
        if self.origin is not None:  # a replay: which seconds of the recording
            t1 = (self._now_ns - self.origin) / 1e9
            title += f", {t1 - self.window_ns / 1e9:.1f}–{t1:.1f} s (z/x)"
        self.border_title = title

    def watch_window_ns(self) -> None:
        self._title()
        self.refresh()

    def action_zoom_in(self) -> None:
        self.window_ns = max(MIN_WINDOW_NS, self.window_ns // 2)

    def action_zoom_out(self) -> None:
        self.window_ns = min(MAX_WINDOW_NS, self.window_ns * 2)

    def get_content_height(self, _container: object, _viewport: object, width: int) -> int:
        return max(1, len(self._keys)) + 2

    def render(self) -> Text:
        t1 = self._now_ns
        t0 = t1 - self.window_ns
        width = max(1, self.size.width - LABEL - BUSY)
        streams = self._keys
        pids = {pid for pid, _ in streams}
        out = Text(no_wrap=True, overflow="crop")
        if not streams:
            out.append("no kernels or copies in this window\n", style="dim")
        for pid, stream in streams:
            label = f"s{stream}" if len(pids) == 1 else f"{pid}:s{stream}"
            out.append(f"{label[: LABEL - 1]:<{LABEL}}", style="bold")
            parts = [self._of_kind(kind, pid, stream) for kind, _ in KINDS]
            starts = np.concatenate([a["t_ns"] for a in parts]).astype(np.int64)
            ends = np.concatenate([a["end_ns"] for a in parts]).astype(np.int64)
            codes = np.repeat(np.arange(len(KINDS)), [len(a) for a in parts])
            keep = (ends > t0) & (starts < t1) & (ends >= starts)
            starts, ends, codes = starts[keep], ends[keep], codes[keep]
            off = self._off.get(pid, iv.EMPTY)
            row = stream_cells(t0, t1, width, starts, ends, codes, off)
            out.append_text(busy.draw(row, LETTERS, STYLES, True))
            share = 100 * busy_fraction(t0, t1, starts, ends, off)
            out.append(f"{share:5.1f}%\n" if share < 10 else f"{share:5.0f}%\n")
        out.append(f"{'':<{LABEL}}")
        out.append(busy.axis(width, self.window_ns, self._lag_ns), style="dim")
        out.append(f"\n{'':<{LABEL}}height: busy share of the cell  ", style="dim")
        for kind, colour in KINDS:
            out.append(f"■ {kind} ", style=colour)
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
