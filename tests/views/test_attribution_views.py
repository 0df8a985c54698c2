"""Pilot tests of the attribution widgets at 80x24, on data built by the analysis."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from textual.app import App, ComposeResult

from gtop.analysis.attribution.lanes import build_lanes
from gtop.analysis.attribution.partition import Unit, attribute
from gtop.analysis.report.gpu_report import unit_summary
from gtop.core.layouts import ApiClass, BlockReason, ThreadState
from gtop.views.widgets.gpu_ribbon import GpuRibbon
from gtop.views.widgets.offgpu_bar import OffGpuBar
from gtop.views.widgets.swimlanes import Swimlanes
from tests.analysis.build import api, kernel, records, state

MS = 1_000_000
ON, BLK = ThreadState.ON_CPU, ThreadState.BLOCKED


def workload():
    """10 iterations of 60 ms: a 30 ms kernel, 10 ms sync return, 20 ms asleep."""
    kernels, apis, states = [], [], []
    for i in range(10):
        t = i * 60 * MS
        kernels.append(kernel(t + 1 * MS, t + 31 * MS, corr=i + 1))
        apis += [api(t, t + 1 * MS, corr=i + 1), api(t + 1 * MS, t + 40 * MS, cls=ApiClass.SYNC)]
        states += [
            state(t, t + 1 * MS, ON),
            state(t + 1 * MS, t + 40 * MS, BLK, reason=BlockReason.GPU_WAIT),
            state(t + 40 * MS, t + 60 * MS, BLK, reason=BlockReason.SLEEP),
        ]
    return records(kernels=kernels, apis=apis, states=states), 0, 600 * MS


class Board(App):
    def __init__(self, color: bool = True) -> None:
        super().__init__()
        self.color = color

    def compose(self) -> ComposeResult:
        rec, t0, t1 = workload()
        res = attribute(rec, t0, t1)[Unit("device", 0)]
        ribbon = GpuRibbon()
        ribbon.show(res.partition, t0, t1)
        bar = OffGpuBar()
        bar.summary = unit_summary(res)
        lanes = Swimlanes()
        for w in (ribbon, bar, lanes):
            w.color = self.color
        yield ribbon
        yield bar
        yield lanes
        self.lanes_data = (build_lanes(rec, t0, t1), t0, t1)

    def on_mount(self) -> None:
        self.query_one(Swimlanes).show(*self.lanes_data)


def text(widget) -> str:
    return widget.render().plain


def test_ribbon_shows_busy_cells_and_axis() -> None:
    asyncio.run(_test_ribbon_shows_busy_cells_and_axis())


async def _test_ribbon_shows_busy_cells_and_axis() -> None:
    app = Board()
    async with app.run_test(size=(80, 24)):
        ribbon = app.query_one(GpuRibbon)
        lines = text(ribbon).splitlines()
        assert len(lines[0]) == 80
        # the last iteration in 7.5 ms cells: a 30 ms kernel from 541 ms, then the sync
        # returns at 580 ms and the thread sleeps
        assert lines[0].endswith("▇███▂zzz")
        assert lines[1].startswith("-600 ms") and lines[1].endswith("now")


def test_approximation_is_labelled() -> None:
    asyncio.run(_test_approximation_is_labelled())


async def _test_approximation_is_labelled() -> None:
    app = Board()
    async with app.run_test(size=(80, 24)):
        ribbon, bar = app.query_one(GpuRibbon), app.query_one(OffGpuBar)
        ribbon.exact = False
        bar.summary = {**bar.summary, "exact": False}
        assert "APPROXIMATE" in text(ribbon) and "APPROXIMATE" in text(bar)


def test_breakdown_bar_percentages_and_times() -> None:
    asyncio.run(_test_breakdown_bar_percentages_and_times())


async def _test_breakdown_bar_percentages_and_times() -> None:
    app = Board()
    async with app.run_test(size=(80, 24)) as pilot:
        bar = app.query_one(OffGpuBar)
        lines = text(bar).splitlines()
        assert lines[0].startswith("GPU busy  50.0% (GAR)")
        assert len(lines[1]) == 80 and lines[1].count("█") == 40
        body = "\n".join(lines[2:])
        assert "GPU computing" in body and "G:COMP" in body and " 50.0%" in body
        assert "300.0 ms" in body
        assert "sleeping/blocked    OFF_CPU" in body and "33.3%" in body
        assert "waiting for the GPU H:WAIT_GPU" in body and "15.0%" in body
        assert lines[2].startswith("█ GPU computing")  # largest first
        bar.focus()
        await pilot.press("s")
        assert not bar.by_size and text(bar).splitlines()[2].startswith("█ GPU computing")


def test_swimlanes_zoom_pan_and_cursor() -> None:
    asyncio.run(_test_swimlanes_zoom_pan_and_cursor())


async def _test_swimlanes_zoom_pan_and_cursor() -> None:
    app = Board()
    async with app.run_test(size=(80, 24)) as pilot:
        lanes = app.query_one(Swimlanes)
        lanes.focus()
        rows = text(lanes).splitlines()
        assert rows[1].startswith("GPU0 s7") and rows[2].startswith("T100")
        assert "t=+0.000 ms" in rows[-1] and "T100: 11% busy, in sync call" in rows[-1]
        full = lanes.view_span
        await pilot.press("shift+right", "shift+right")
        assert lanes.cursor > 0
        cursor = lanes.cursor
        await pilot.press("z")
        assert lanes.view_span == full // 2
        assert lanes.view_start < cursor < lanes.view_start + lanes.view_span
        start = lanes.view_start
        await pilot.press("greater_than_sign")
        assert lanes.view_start == start + full // 8
        await pilot.press("x", "0")
        assert (lanes.view_start, lanes.view_span, lanes.cursor) == (0, full, 0)
        lanes.cursor = 45 * MS
        assert "GPU0 s7: 0% busy, idle" in text(lanes)
        assert "T100: 0% busy, blocked: sleep" in text(lanes)


@pytest.mark.parametrize("widget", [GpuRibbon, OffGpuBar, Swimlanes])
def test_no_color_has_no_styles(widget) -> None:
    asyncio.run(_test_no_color_has_no_styles(widget))


async def _test_no_color_has_no_styles(widget) -> None:
    app = Board(color=False)
    async with app.run_test(size=(80, 24)):
        rendered = app.query_one(widget).render()
        assert all(not str(span.style).replace("reverse", "").strip() for span in rendered.spans)
        assert np.any([g in rendered.plain for g in "█wz"])
