"""Swimlanes: GPU streams (kernels, copies, queueing and dependency gaps) aligned with
host threads (on-CPU, in CUDA API, runnable, blocked by reason), each cell's height its
busy share (a stream running work, a thread on a CPU), with zoom, pan and a readout of
the cell under the cursor. Takes :class:`gtop.analysis.attribution.lanes.Lane` rows; collects
nothing."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis.attribution.lanes import CODE_NAMES, Code, Lane
from gtop.views.fmt import busy
from gtop.views.fmt.palette import LANE_GLYPH, LANE_STYLE

LABEL_WIDTH = 11
MIN_SPAN_NS = 1_000
VIEWS_KEPT = 8
"""Views whose cells are kept (moving the cursor or zooming back redraws from them)."""
BUSY_CODES = np.isin(np.arange(len(Code)), [Code.KERNEL, Code.COPY, Code.ON_CPU, Code.IN_API])
"""What makes a lane busy: a stream running work, a thread on a CPU."""
QUIET_CODES = np.arange(len(Code)) == Code.IDLE
UNSEEN_CODES = np.arange(len(Code)) == Code.NOT_TRACED


def lane_cells(lane: Lane, edges: np.ndarray) -> busy.Cells:
    """The busy-fraction cells of one lane (:mod:`gtop.views.fmt.busy`); only the
    segments over the edges are read (a lane's segments are sorted and disjoint)."""
    lo = int(np.searchsorted(lane.ends, edges[0], side="right"))
    hi = int(np.searchsorted(lane.starts, edges[-1], side="left"))
    return busy.busy_cells(
        lane.starts[lo:hi],
        lane.ends[lo:hi],
        lane.codes[lo:hi],
        len(Code),
        edges,
        BUSY_CODES,
        QUIET_CODES,
        UNSEEN_CODES,
    )


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def _at(ns: int, origin: int | None, t0: int) -> str:
    """A time on the axis: seconds from the recording's start in a replay (``origin``),
    else milliseconds from the window's start."""
    return f"{(ns - origin) / 1e9:.3f} s" if origin is not None else f"+{_ms(ns - t0)}"


def full_view(lanes: list[Lane], t0: int, t1: int, n: int) -> list[busy.Cells]:
    """Each lane's cells over the whole window in ``n`` cells (what :class:`Swimlanes`
    draws first; a worker makes them: lanes of a busy window hold millions of segments)."""
    edges = busy.cell_edges(t0, t1, n)
    return [lane_cells(lane, edges) for lane in lanes]


class Swimlanes(Widget, can_focus=True):
    """One row per lane over ``[view_start, view_start + view_span)``."""

    DEFAULT_CSS = """
    Swimlanes {
        height: auto;
        min-height: 3;
    }
    """
    BINDINGS = [
        Binding("z", "zoom(0.5)", "Zoom in"),
        Binding("x", "zoom(2)", "Zoom out"),
        Binding("shift+left", "move_cursor(-1)", "Cursor left", show=False),
        Binding("shift+right", "move_cursor(1)", "Cursor right", show=False),
        Binding("less_than_sign", "pan(-0.25)", "Pan left"),
        Binding("greater_than_sign", "pan(0.25)", "Pan right"),
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
    origin: int | None = None
    """A replay's recording start: the axis reads recording time (None: live, from the
    window's start)."""
    color: reactive[bool] = reactive(True)
    """Colours on; off for ``--no-color`` (glyphs alone tell the states apart)."""

    def __init__(self) -> None:
        super().__init__()
        self._views: dict[tuple[int, int, int], list[busy.Cells]] = {}
        """Cells of each lane per view (start, span, cells), for the lanes shown."""

    def watch_lanes(self) -> None:
        self._views.clear()

    def _lane_cells(self, edges: np.ndarray) -> list[busy.Cells]:
        key = (int(edges[0]), int(edges[-1]), len(edges))
        cells = self._views.get(key)
        if cells is None:
            if len(self._views) >= VIEWS_KEPT:
                self._views.pop(next(iter(self._views)))
            cells = self._views[key] = [lane_cells(lane, edges) for lane in self.lanes]
        return cells

    def show(
        self, lanes: list[Lane], t0: int, t1: int, cells: list[busy.Cells] | None = None
    ) -> None:
        """Show ``lanes`` over the data window ``[t0, t1)``, zoomed out fully (``cells``:
        :func:`full_view` of them at some width, made already)."""
        self.lanes = tuple(lanes)
        self.t0, self.t1 = t0, t1
        self.action_reset()
        if cells:
            n = len(cells[0].fraction)
            self._views[(t0, t1, n + 1)] = cells

    def cell_count(self, width: int) -> int:
        """How many cells a lane gets at ``width`` columns."""
        return max(1, width - LABEL_WIDTH - 1)

    def _cells(self) -> int:
        return self.cell_count(self.size.width)

    def _edges(self) -> np.ndarray:
        return busy.cell_edges(self.view_start, self.view_start + self.view_span, self._cells())

    def render(self) -> Text:
        edges = self._edges()
        n = len(edges) - 1
        col = int(np.clip(np.searchsorted(edges, self.cursor, side="right") - 1, 0, n - 1))
        rows = [
            Text(
                f"{_at(self.view_start, self.origin, self.t0):<{LABEL_WIDTH + 1}}"
                f"{'span ' + _ms(self.view_span):>{n}}"
            )
        ]
        readout = Text(f"t={_at(self.cursor, self.origin, self.t0)}  cell:")
        for lane, cells in zip(self.lanes, self._lane_cells(edges), strict=True):
            row = Text(f"{lane.label[:LABEL_WIDTH]:<{LABEL_WIDTH}} ")
            line = busy.draw(cells, LANE_GLYPH, LANE_STYLE, self.color)
            line.stylize("reverse", col, col + 1)
            rows.append(row + line)
            code = int(cells.dominant[col])
            share = f"{100 * cells.fraction[col]:.0f}% busy" if code >= 0 else "-"
            what = f", {CODE_NAMES[Code(code)]}" if code >= 0 else ""
            readout.append(f"  {lane.label}: {share}{what}")
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
