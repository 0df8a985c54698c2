"""Swimlanes: GPU streams (kernels, copies, queueing and dependency gaps) aligned with
host threads (on-CPU, in CUDA API, runnable, blocked by reason), with zoom, pan and a
cursor readout. Takes :class:`gtop.analysis.lanes.Lane` rows; collects nothing."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis.lanes import CODE_NAMES, Code, Lane
from gtop.views.fmt.palette import LANE_GLYPH, LANE_STYLE, NO_DATA_GLYPH, style

LABEL_WIDTH = 11
MIN_SPAN_NS = 1_000


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


class Swimlanes(Widget, can_focus=True):
    """One row per lane over ``[view_start, view_start + view_span)``."""

    DEFAULT_CSS = """
    Swimlanes {
        height: auto;
        min-height: 3;
    }
    """
    BINDINGS = [
        Binding("plus,equals_sign", "zoom(0.5)", "Zoom in"),
        Binding("minus", "zoom(2)", "Zoom out"),
        Binding("left", "move_cursor(-1)", "Cursor left", show=False),
        Binding("right", "move_cursor(1)", "Cursor right", show=False),
        Binding("shift+left", "pan(-0.25)", "Pan left"),
        Binding("shift+right", "pan(0.25)", "Pan right"),
        Binding("0", "reset", "Whole window"),
    ]

    lanes: reactive[tuple[Lane, ...]] = reactive(tuple, always_update=True)
    """The rows: stream lanes first, then thread lanes (:func:`build_lanes`)."""
    t0: reactive[int] = reactive(0)
    """Start of the data window (ns); ``0`` on the axis."""
    t1: reactive[int] = reactive(1)
    """End of the data window (ns)."""
    view_start: reactive[int] = reactive(0)
    """First visible time (ns)."""
    view_span: reactive[int] = reactive(1)
    """Visible length (ns); zoom changes it around the cursor."""
    cursor: reactive[int] = reactive(0)
    """Time under the cursor (ns), shown in the readout line."""
    color: reactive[bool] = reactive(True)
    """Colours on; off for ``--no-color`` (glyphs alone tell the states apart)."""

    def show(self, lanes: list[Lane], t0: int, t1: int) -> None:
        """Show ``lanes`` over the data window ``[t0, t1)``, zoomed out fully."""
        self.lanes = tuple(lanes)
        self.t0, self.t1 = t0, t1
        self.action_reset()

    def _cells(self) -> int:
        return max(1, self.size.width - LABEL_WIDTH - 1)

    def _edges(self) -> np.ndarray:
        n = self._cells()
        return self.view_start + np.rint(np.arange(n + 1) * (self.view_span / n)).astype(np.int64)

    def render(self) -> Text:
        edges = self._edges()
        n = len(edges) - 1
        col = int(np.clip(np.searchsorted(edges, self.cursor, side="right") - 1, 0, n - 1))
        rows = [
            Text(
                f"{'+' + _ms(self.view_start - self.t0):<{LABEL_WIDTH + 1}}"
                f"{'span ' + _ms(self.view_span):>{n}}"
            )
        ]
        for lane in self.lanes:
            row = Text(f"{lane.label[:LABEL_WIDTH]:<{LABEL_WIDTH}} ")
            for i, code in enumerate(lane.cells(edges).tolist()):
                glyph = LANE_GLYPH[Code(code)] if code >= 0 else NO_DATA_GLYPH
                st = style(LANE_STYLE[Code(code)], self.color) if code >= 0 else ""
                row.append(glyph, f"{st} reverse".strip() if i == col else st)
            rows.append(row)
        readout = Text(f"t=+{_ms(self.cursor - self.t0)}")
        for lane in self.lanes:
            code = lane.at(self.cursor)
            readout.append(f"  {lane.label}: {CODE_NAMES[Code(code)] if code >= 0 else '-'}")
        rows.append(readout)
        return Text("\n").join(rows)

    def action_zoom(self, factor: float) -> None:
        full = max(1, self.t1 - self.t0)
        span = int(min(full, max(MIN_SPAN_NS, self.view_span * factor)))
        rel = (self.cursor - self.view_start) / max(1, self.view_span)
        self.view_span = span
        self._place(int(self.cursor - rel * span))

    def action_pan(self, fraction: float) -> None:
        shift = int(self.view_span * fraction)
        self._place(self.view_start + shift)
        self.cursor = int(
            np.clip(self.cursor + shift, self.view_start, self.view_start + self.view_span - 1)
        )

    def action_move_cursor(self, cells: int) -> None:
        step = max(1, self.view_span // self._cells())
        self.cursor = int(np.clip(self.cursor + cells * step, self.t0, self.t1 - 1))
        if self.cursor < self.view_start:
            self._place(self.cursor)
        elif self.cursor >= self.view_start + self.view_span:
            self._place(self.cursor - self.view_span + step)

    def action_reset(self) -> None:
        self.view_span = max(1, self.t1 - self.t0)
        self.view_start = self.t0
        self.cursor = self.t0

    def _place(self, start: int) -> None:
        self.view_start = int(np.clip(start, self.t0, max(self.t0, self.t1 - self.view_span)))
