"""Kernel sampling's off phases on the timelines: the Streams timeline, the GPU-time
ribbon and the Swimlanes stream lane draw them as not traced (the hatch glyph), never as
idle, and draw the traced time as they drew it unsampled.

``fixes/decode-eager.gtop`` (H100, default agent mode): a launch-bound eager decode at
~29k kernels/s, and the same run as the agent's duty cycle would have recorded it
(:mod:`tests.analysis.sampled`: 0.4 s traced of every second).
"""

from __future__ import annotations

import itertools

import numpy as np
from textual.app import App, ComposeResult

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import attribute
from gtop.analysis.causes import Cause
from gtop.analysis.lanes import build_lanes
from gtop.analysis.records import Records
from gtop.analysis.report import ATTRIBUTION_STREAMS
from gtop.core import layouts
from gtop.recordings.clipped import choose
from gtop.recordings.reader import Recording
from gtop.views.fmt import busy
from gtop.views.fmt.palette import CAUSE_GLYPH
from gtop.views.widgets.gpu_ribbon import GpuRibbon
from gtop.views.widgets.stream_timeline import BUSY, LABEL, StreamTimeline
from gtop.views.widgets.swimlanes import LABEL_WIDTH, Swimlanes
from tests.analysis.sampled import DutyCycle, sample
from tests.views.conftest import REPO

RECORDING = REPO / "recordings" / "fixes" / "decode-eager.gtop"
CELLS = 60
SPAN_NS = 3_000_000_000
HATCH = CAUSE_GLYPH[Cause.NOT_TRACED]


def load() -> tuple[dict[str, np.ndarray], DutyCycle, int]:
    with Recording(RECORDING) as rec:
        data = {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}
        r0, r1 = rec.time_range()
        window = choose(rec)
    data.setdefault("memset", layouts.MEMSET.empty(0))
    return data, DutyCycle(r0, r1 + 1), window.t1


class Board(App):
    """The three timelines over the last 3 s of the diagnosed window."""

    def __init__(self, data: dict[str, np.ndarray], t1: int) -> None:
        super().__init__()
        self.data, self.t1 = data, t1

    def compose(self) -> ComposeResult:
        yield StreamTimeline()
        yield GpuRibbon()
        yield Swimlanes()

    def on_mount(self) -> None:
        t1, t0 = self.t1, self.t1 - SPAN_NS
        d = self.data
        timeline = self.query_one(StreamTimeline)
        timeline.styles.width = CELLS + LABEL + BUSY + 2  # + its border
        timeline.window_ns = SPAN_NS
        off = d.get("untraced", layouts.UNTRACED.empty(0))
        timeline.set_activity(d["kernel"], d["memcpy"], d["memset"], t1, off=off)
        rec = Records.from_streams({k: v for k, v in d.items() if len(v)})
        (res,) = attribute(rec, t0, t1, "process").values()
        ribbon = self.query_one(GpuRibbon)
        ribbon.styles.width = CELLS
        ribbon.show(res.partition, t0, t1)
        lanes = self.query_one(Swimlanes)
        lanes.styles.width = CELLS + LABEL_WIDTH + 1
        lanes.show(build_lanes(rec, t0, t1)[:1], t0, t1)


async def rows(data: dict[str, np.ndarray], t1: int) -> dict[str, str]:
    app = Board(data, t1)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        stream = app.query_one(StreamTimeline).render().plain.splitlines()[0]
        ribbon = app.query_one(GpuRibbon).render().plain.splitlines()[0]
        lane = app.query_one(Swimlanes).render().plain.splitlines()[1]
        return {
            "streams": stream[LABEL : LABEL + CELLS],
            "ribbon": ribbon[:CELLS],
            "swimlanes": lane[LABEL_WIDTH + 1 : LABEL_WIDTH + 1 + CELLS],
        }


async def test_off_phases_draw_as_not_traced_and_traced_time_as_before() -> None:
    data, cycle, t1 = load()
    full = await rows(data, t1)
    sampled = await rows(sample(data, cycle), t1)
    edges = busy.cell_edges(t1 - SPAN_NS, t1, CELLS)
    off = iv.Spans(*cycle.off_spans())
    starts_in, ends_in = iv.owner(off, edges[:-1]), iv.owner(off, edges[1:] - 1)
    inside = (starts_in >= 0) & (starts_in == ends_in)  # the cell lies in one off phase
    clear = np.array([iv.clip(off, a, b).measure() == 0 for a, b in itertools.pairwise(edges)])
    assert inside.sum() >= 20 and clear.sum() >= 10
    for name in full:
        got, was = sampled[name], full[name]
        assert len(got) == len(was) == CELLS, name
        assert set(got[i] for i in np.flatnonzero(inside)) == {HATCH}, (name, got)
        assert [got[i] for i in np.flatnonzero(clear)] == [was[i] for i in np.flatnonzero(clear)]
        assert HATCH not in was, name
