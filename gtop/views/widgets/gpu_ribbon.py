"""The on/off-GPU ribbon: the window in equal cells, newest on the right. Each cell's
height is its on-GPU share and its colour (or, with no GPU time, its letter) the cause
that held it longest (:mod:`gtop.views.fmt.busy`)."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis.attribution.causes import ON_CAUSES, Cause
from gtop.analysis.attribution.partition import Partition
from gtop.views.fmt import busy
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE, style

ON_MASK = np.isin(np.arange(len(Cause)), ON_CAUSES)
UNSEEN = np.arange(len(Cause)) == Cause.NOT_TRACED
LETTERS = {int(c): CAUSE_GLYPH[c] for c in Cause}
STYLES = {int(c): CAUSE_STYLE[c] for c in Cause}


def ribbon_cells(partition: Partition | None, t0: int, t1: int, width: int) -> busy.Cells:
    """The ribbon's cells at ``width`` (a worker computes them ahead of the first frame:
    a busy window has ~10^5 segments to cut)."""
    edges = busy.cell_edges(t0, t1, width)
    if partition is None:
        return busy.Cells(np.zeros(len(edges) - 1), np.full(len(edges) - 1, -1))
    p = partition
    return busy.busy_cells(p.starts, p.ends, p.causes, len(Cause), edges, ON_MASK, unseen=UNSEEN)


class GpuRibbon(Widget, can_focus=True):
    """A ribbon over one unit's partition, with a time axis (``l`` opens the legend)."""

    DEFAULT_CSS = """
    GpuRibbon {
        height: auto;
        min-height: 2;
    }
    """
    partition: reactive[Partition | None] = reactive(None, always_update=True)
    """The unit's window, tiled by cause
    (:class:`~gtop.analysis.attribution.partition.Partition`)."""
    span: reactive[tuple[int, int, int]] = reactive((0, 1, 0))
    """``(t0, t1, lag_ns)``: the window, and how far its end lies before the newest data."""
    exact: reactive[bool] = reactive(True)
    """False when the partition comes from the NVML-only approximation: labelled so."""
    color: reactive[bool] = reactive(True)
    """Colours on; off for ``--no-color`` (glyphs alone tell the causes apart)."""

    def __init__(self) -> None:
        super().__init__()
        self._cells: busy.Cells | None = None
        """The cells of the partition shown, at the width they were made for."""

    def show(
        self,
        partition: Partition,
        t0: int,
        t1: int,
        lag_ns: int = 0,
        cells: busy.Cells | None = None,
    ) -> None:
        """Draw ``partition`` over ``[t0, t1)`` (``cells``: :func:`ribbon_cells` of it at
        some width, made already)."""
        self.span = (t0, t1, lag_ns)
        self.partition = partition
        self._cells = cells

    def watch_partition(self) -> None:
        self._cells = None

    def watch_span(self) -> None:
        self._cells = None

    def cells(self, width: int) -> busy.Cells:
        """The ribbon's cells at ``width`` (tests read them)."""
        if self._cells is None or len(self._cells.fraction) != width:
            t0, t1, _ = self.span
            self._cells = ribbon_cells(self.partition, t0, t1, width)
        return self._cells

    def render(self) -> Text:
        width = max(1, self.size.width)
        t0, t1, lag = self.span
        ribbon = busy.draw(self.cells(width), LETTERS, STYLES, self.color)
        axis = busy.axis(width, t1 - t0, lag)
        if not self.exact:
            tag = "  APPROXIMATE (no CUPTI)  "
            left, right = axis.split("  ")[0], axis.split()[-1]
            axis = left + tag.center(width - len(left) - len(right)) + right
        return Text("\n").join([ribbon, Text(axis, style=style("dim", self.color))])
