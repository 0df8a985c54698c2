"""Pilot tests of the flamegraph and thread-bar widgets at 80x24, on a real BPF-tier run.

No async pytest plugin is a test dependency, so each pilot session runs in asyncio.run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from gtop.analysis.host.thread_time import fold
from gtop.core.layouts import BlockReason
from gtop.views.widgets.flamegraph import FlameGraph, _Icicle, build_tree, layout
from gtop.views.widgets.thread_bars import ThreadBars, bin_states

FIXTURE = Path(__file__).parent / "fixtures" / "phases_run.npz"


@pytest.fixture(scope="module")
def run():
    data = np.load(
        FIXTURE
    )  # made by: python benchmarks/host_capture.py FIXTURE --phases --tier bpf
    meta = json.loads(data["meta"].tobytes())
    stacks = {int(k): v for k, v in meta["stacks"].items()}
    names = {int(k): v for k, v in meta["names"].items()}
    return data["intervals"], data["samples"], stacks, names, meta["info"]


class FlameApp(App):
    def __init__(self, folded) -> None:
        super().__init__()
        self.folded = folded
        self.selections: list[tuple] = []

    def compose(self) -> ComposeResult:
        yield FlameGraph(self.folded)

    def on_flame_graph_frame_selected(self, msg: FlameGraph.FrameSelected) -> None:
        self.selections.append(msg.path)


def test_layout_widths_are_time(run):
    intervals, samples, stacks, _names, _info = run
    folded = fold(intervals, samples, stacks)
    root = build_tree(folded)
    spans = [s for s in layout(root, (), 78) if s.depth == 0]
    for s in spans:
        assert abs((s.x1 - s.x0) - 78 * s.node.total / root.total) <= 1


def test_flamegraph_keys_zoom_and_search(run):
    asyncio.run(_flamegraph_keys_zoom_and_search(run))


async def _flamegraph_keys_zoom_and_search(run):
    intervals, samples, stacks, _names, _info = run
    app = FlameApp(fold(intervals, samples, stacks))
    async with app.run_test(size=(80, 24)) as pilot:
        graph = app.query_one(FlameGraph)
        graph.focus()
        assert not graph.check_action("zoom_in", ()) and not graph.check_action("zoom_out", ())
        await pilot.press("down")
        assert graph.check_action("zoom_in", ())
        assert graph.selected and len(graph.selected) == 1
        await pilot.press("down")
        assert len(graph.selected) == 2
        await pilot.press("enter")
        assert graph.zoom == graph.selected
        await pilot.press("escape")
        assert len(graph.zoom) == 1
        await pilot.press("escape")
        assert graph.zoom == ()
        await pilot.press("slash")
        assert app.focused is app.query_one(Input)
        await pilot.press(*"pipe_read")
        assert graph.search == "pipe_read"
        assert 0 < graph.matched_seconds() < build_tree(graph.folded).total
        await pilot.press("enter")
        assert app.focused is graph
        assert app.selections, "selection changes are posted as messages"


def test_flamegraph_mouse_selects_then_zooms(run):
    asyncio.run(_flamegraph_mouse_selects_then_zooms(run))


async def _flamegraph_mouse_selects_then_zooms(run):
    intervals, samples, stacks, _names, _info = run
    app = FlameApp(fold(intervals, samples, stacks, on_cpu=False))
    async with app.run_test(size=(80, 24)) as pilot:
        graph = app.query_one(FlameGraph)
        await pilot.click(_Icicle, offset=(2, 1))
        assert graph.selected[:1] == ("off-CPU",) and len(graph.selected) == 2
        await pilot.click(_Icicle, offset=(2, 1))
        assert graph.zoom == graph.selected


def test_stuck_thread_bar_is_all_io(run):
    intervals, _samples, _stacks, _names, info = run
    t1 = int(intervals["end_ns"].max())
    cells = bin_states(intervals, [info["stuck"], info["workers"][0]], t1 - 2_000_000_000, t1, 60)
    assert set(cells[0].tolist()) == {2 + BlockReason.IO}
    worker = set(cells[1].tolist())
    assert {2 + BlockReason.SLEEP, 2 + BlockReason.IO} <= worker
    assert worker & {0, 1}, "busy phases: on-CPU, or runnable on a loaded machine"


class BarsApp(App):
    def compose(self) -> ComposeResult:
        yield ThreadBars()


def test_thread_bars_render_names_and_legend(run):
    asyncio.run(_thread_bars_render_names_and_legend(run))


async def _thread_bars_render_names_and_legend(run):
    intervals, _samples, _stacks, names, _info = run
    app = BarsApp()
    async with app.run_test(size=(80, 24)) as pilot:
        bars = app.query_one(ThreadBars)
        bars.window_s = 2.0
        bars.show(intervals, names, int(intervals["end_ns"].max()))
        await pilot.pause()
        text = str(bars.render())
        assert "phases-0" in text and "stuck" in text and "runnable" in text
        assert bars.size.height == text.count("\n") + 1


def test_flamegraph_snapshot(run, snap_compare):
    """Off-CPU flamegraph of the real run, zoomed into the first thread-independent frame."""
    intervals, samples, stacks, _names, _info = run
    app = FlameApp(fold(intervals, samples, stacks, on_cpu=False))
    assert snap_compare(app, terminal_size=(80, 24), press=["down", "down", "enter"])
