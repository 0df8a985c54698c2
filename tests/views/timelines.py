"""The three timelines (Streams, the GPU-time ribbon, Swimlanes' first stream lane) over
one window of a recording's rows, as their tabs draw them, and the cells each draws:
what the timeline tests compare."""

from __future__ import annotations

import numpy as np
from textual.app import App, ComposeResult

from gtop.analysis.attribution.lanes import build_lanes
from gtop.analysis.attribution.partition import attribute
from gtop.analysis.attribution.records import Records
from gtop.core import layouts
from gtop.views.tabs.swimlanes_tab import of_pids
from gtop.views.widgets.gpu_ribbon import GpuRibbon
from gtop.views.widgets.stream_timeline import BUSY, LABEL, StreamTimeline
from gtop.views.widgets.swimlanes import LABEL_WIDTH, Swimlanes


class Timelines(App):
    """The timelines of one process's ``data`` (streams by name) over the ``span_ns``
    before ``t1``, ``cells`` wide."""

    def __init__(self, data: dict[str, np.ndarray], t1: int, span_ns: int, cells: int) -> None:
        super().__init__()
        self.data, self.t1, self.span_ns, self.cells = data, t1, span_ns, cells

    def compose(self) -> ComposeResult:
        yield StreamTimeline()
        yield GpuRibbon()
        yield Swimlanes()

    def on_mount(self) -> None:
        t1, t0, d = self.t1, self.t1 - self.span_ns, self.data
        empty = {"memcpy": layouts.MEMCPY, "memset": layouts.MEMSET, "untraced": layouts.UNTRACED}
        copies, sets, off = (d.get(name, spec.empty(0)) for name, spec in empty.items())
        timeline = self.query_one(StreamTimeline)
        timeline.styles.width = self.cells + LABEL + BUSY + 2  # + its border
        timeline.window_ns = self.span_ns
        timeline.set_activity(d["kernel"], copies, sets, t1, off=off)
        rec = Records.from_streams({k: v for k, v in d.items() if len(v)})
        ((unit, res),) = attribute(rec, t0, t1, "process").items()
        ribbon = self.query_one(GpuRibbon)
        ribbon.styles.width = self.cells
        ribbon.show(res.partition, t0, t1)
        lanes = self.query_one(Swimlanes)
        lanes.styles.width = self.cells + LABEL_WIDTH + 1
        mine = of_pids(rec, frozenset({unit.pid}))
        lanes.show(build_lanes(mine, t0, t1)[:1], t0, t1)  # as its tab

    def lines(self) -> dict[str, str]:
        """Each timeline's first row of cells, as drawn (labels and totals included)."""
        return {
            "streams": self.query_one(StreamTimeline).render().plain.splitlines()[0],
            "ribbon": self.query_one(GpuRibbon).render().plain.splitlines()[0],
            "swimlanes": self.query_one(Swimlanes).render().plain.splitlines()[1],
        }

    def cells_drawn(self) -> dict[str, str]:
        """Each timeline's cells alone."""
        line, n = self.lines(), self.cells
        return {
            "streams": line["streams"][LABEL : LABEL + n],
            "ribbon": line["ribbon"][:n],
            "swimlanes": line["swimlanes"][LABEL_WIDTH + 1 : LABEL_WIDTH + 1 + n],
        }
