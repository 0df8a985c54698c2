"""The probe widgets under Textual's pilot, fed with analyses of real-layout records.

No async test plugin is needed: each test drives the pilot through ``asyncio.run``.
"""

from __future__ import annotations

import asyncio

import numpy as np
from textual.app import App, ComposeResult
from textual.widget import Widget

from gtop.probes.catalog import block_sched, tensorop
from gtop.views.widgets.dmat import DmatView
from gtop.views.widgets.sm_schedule import SmSchedule
from gtop.views.widgets.tensorop_view import TensorOpView

from .records import mem_records, simulated_launch, tensorop_records


class _One(App):
    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        yield self.widget


def test_sm_schedule_draws_rows_and_zooms() -> None:
    async def run() -> None:
        sched = block_sched.analyse(simulated_launch(blocks=400, sm_ids=tuple(range(0, 264, 2))))
        view = SmSchedule(sched)
        async with _One(view).run_test(size=(80, 24)) as pilot:
            text = view.render().plain
            assert text.startswith("400 blocks on 132 SMs, 2 waves")
            assert "tail " in text and "block durations " in text and " p50 " in text
            lines = text.splitlines()
            assert lines[3].startswith("SM    0   │") and lines[4].startswith("SM    2   │")
            assert len(lines) == view.size.height == 24  # summary, SM rows, durations
            assert all(len(line) == view.size.width == 78 for line in lines[3:-1])
            assert view.check_action("zoom", (0.5,)) is None  # cannot zoom out of the launch
            await pilot.press("z", "shift+right", "pagedown", "down")
            assert view.zoom == 2 and view.pan > 0 and view.top == 11
            assert view.render().plain.splitlines()[3].startswith("SM   22   │")
            await pilot.press("0")
            assert (view.zoom, view.pan, view.top) == (1.0, 0.0, 0)

    asyncio.run(run())


def test_sm_schedule_without_data_greys_keys() -> None:
    async def run() -> None:
        view = SmSchedule()
        async with _One(view).run_test(size=(80, 24)) as pilot:
            assert "toggle the block_sched probe" in view.render().plain
            assert view.check_action("pan", (1,)) is None
            await pilot.press("z")
            assert view.zoom == 1.0

    asyncio.run(run())


def test_tensorop_view_summary_and_timeline() -> None:
    async def run() -> None:
        ops = tensorop.analyse(tensorop_records(64, 512), ["wgmma.m64n128k16.f32.f16.f16"])
        view = TensorOpView(ops)
        async with _One(view).run_test(size=(80, 24)) as pilot:
            lines = view.render().plain.splitlines()
            assert lines[0].startswith("wgmma.m64n128k16.f32.f16.f16")
            assert "32,768 ops" in lines[0] and "12.0 cyc/op" in lines[0]
            assert lines[1].startswith("wgmma.wait_group")
            assert lines[2].startswith("block  warp    SM │")  # the bars' columns named
            assert "━" in lines[3] and "│" in lines[3]
            await pilot.press("down", "z")
            assert view.top == 1 and view.zoom == 2

    asyncio.run(run())


def test_dmat_labels_shading_alignment_zoom() -> None:
    async def run() -> None:
        rec, ptrs = mem_records(n=6000)
        view = DmatView(rec, ptrs)
        async with _One(view).run_test(size=(80, 24)) as pilot:
            text = view.render().plain
            assert text.startswith("DMAT 6,000 accesses") and "global timer" in text
            assert text.splitlines()[1].startswith("arg  64 KiB page    │ time →")  # named
            rows = text.splitlines()[2:-1]
            assert rows[0].startswith("x    0x7f0000000000 │")
            assert all(len(row) == view.size.width == 78 for row in rows)  # label + cells
            assert any(c in text for c in "░▒▓█")
            d = view.grid()
            assert d.counts.shape[0] == 78 - len("x    0x7f0000000000 │") and d.counts.sum() == 6000
            await pilot.press("a")
            assert view.align == "sm_clock" and "per-SM clock" in view.render().plain
            fit = view.render().plain.splitlines()
            assert len(fit) <= 24 and "/row)" in fit[0]
            await pilot.press("left_curly_bracket")
            assert view.pages_per_row >= 1
            await pilot.press("z", "z")
            zoomed = view.grid()
            assert 0 < zoomed.counts.sum() < 6000
            labels = {lbl for lbl in view.grid().labels if lbl}
            assert labels <= {"x", "y", "out"}

    asyncio.run(run())


def test_dmat_empty() -> None:
    async def run() -> None:
        rec, _ = mem_records(n=30)
        view = DmatView(rec[:0])
        async with _One(view).run_test(size=(80, 24)):
            assert "toggle the mem_trace probe" in view.render().plain
            assert np.asarray(view.row_count()) == 0

    asyncio.run(run())


def test_dmat_rows_never_mix_arguments() -> None:
    from gtop.views.widgets.dmat import _row_starts

    assert _row_starts(["x", "x", "x", "y", "y", "", ""], 2).tolist() == [0, 2, 3, 5]
    assert _row_starts(["a"] * 5, 1).tolist() == [0, 1, 2, 3, 4]


def test_dmat_notes_name_functions_and_untraced_tensor_copies() -> None:
    from gtop.probes.catalog import mem_trace

    rec, ptrs = mem_records(n=600)
    rec["kernel"][:100] = 3  # accesses made inside .func 3
    header = {
        "kernels": [
            {"name": "k", "kernel_id": 0, "sites": {"access": 4, "untraced_tensor_copy": 2}},
            {"name": "other", "kernel_id": 1, "sites": {"untraced_tensor_copy": 9}},
        ],
        "functions": [{"name": "load_tile", "kernel_id": 3, "sites": {"access": 1}}],
    }
    notes = mem_trace.notes(header, "k", rec)
    assert notes[0] == "100 accesses via load_tile"
    assert notes[1].startswith("2 TMA tensor-copy sites not traced (")
    assert mem_trace.notes({"kernels": [{"name": "k", "sites": {"access": 1}}]}, "k", rec) == []

    async def run() -> None:
        view = DmatView(rec, ptrs)
        view.notes = notes
        async with _One(view).run_test(size=(80, 24)):
            lines = view.render().plain.splitlines()
            assert lines[1:3] == notes
            assert len(lines) <= 24

    asyncio.run(run())
