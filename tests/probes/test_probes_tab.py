"""The Probes tab over the real probed recording: snapshots of the per-SM schedule and the
DMAT (80×24 and 160×48), and pilot tests of its keys.

Update snapshots after an intended change with
``pytest tests/probes/test_probes_tab.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from gtop.analysis.kernels import probes as data
from gtop.core.hub import Entity, Update
from gtop.core.model import Model
from gtop.probes.engine.instrumentable import NO_PTX
from gtop.probes.record_streams import LAUNCH_KIND, ProbeLaunch
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp
from gtop.views.screens.help import HelpScreen
from gtop.views.screens.legend import LegendScreen, legend_text
from gtop.views.tabs.probes_tab import EMPTY, ProbesTab
from gtop.views.widgets.sm_schedule import SCHED
from tests.views.conftest import frozen_replay
from tests.views.test_process_tabs import open_tab

RECORDING = Path(__file__).resolve().parents[2] / "recordings" / "probes_triton.gtop"


def _recorded_pid() -> int:
    with Recording(RECORDING) as rec:
        return int(rec.entities(LAUNCH_KIND)[0].value["pid"])


PID = _recorded_pid()
"""The pid the capture filed its launches under (0 in a capture converted from .npz)."""
LARGE = (160, 48)


def replayed_model(until_launch: int | None = None) -> Model:
    """The model after replaying the whole recording (or up to a launch's start)."""
    source = ReplaySource(Recording(RECORDING))
    source.paused = True
    end = source.t_end
    if until_launch is not None:
        rec = Recording(RECORDING)
        v = next(e.value for e in rec.entities(LAUNCH_KIND) if e.value["launch"] == until_launch)
        end = v["t_start_ns"] - 1
    source.seek(end)
    model = Model()
    model.apply(source.poll(), source.now_ns())
    return model


class ProbesApp(App):
    def __init__(self, model: Model, pid: int = PID) -> None:
        super().__init__()
        self.model = model
        self.tab = ProbesTab(pid)

    def compose(self) -> ComposeResult:
        yield self.tab

    def on_mount(self) -> None:
        self.tab.show(self.model)


# --- snapshots ---------------------------------------------------------------------------


def test_snapshot_schedule_80x24(snap_compare) -> None:
    assert snap_compare(ProbesApp(replayed_model()), terminal_size=(80, 24))


def test_snapshot_schedule_attention_large(snap_compare) -> None:
    app = ProbesApp(replayed_model())
    assert snap_compare(app, terminal_size=LARGE, press=["down", "down", "down"])


def test_snapshot_dmat_80x24(snap_compare) -> None:
    assert snap_compare(ProbesApp(replayed_model()), terminal_size=(80, 24), press=["m"])


def test_snapshot_dmat_attention_large_sm_clock(snap_compare) -> None:
    app = ProbesApp(replayed_model())
    press = ["down"] * 5 + ["a"]
    assert snap_compare(app, terminal_size=LARGE, press=press)


# --- keys --------------------------------------------------------------------------------


def _run(coro) -> None:
    asyncio.run(coro)


def test_selecting_a_launch_shows_its_probe_and_keys_switch_views() -> None:
    async def run() -> None:
        app = ProbesApp(replayed_model())
        async with app.run_test(size=(80, 24)) as pilot:
            tab = app.tab
            await pilot.pause()
            assert tab.table.row_count == 6 and tab.selected == f"{PID}:1"
            assert tab.view == "schedule" and tab.views["schedule"].schedule.blocks == 1024
            assert "matmul_kernel" in str(tab.info.render())
            await pilot.press("down")
            assert (tab.selected, tab.view) == (f"{PID}:2", "tensorops")
            assert tab.views["tensorops"].ops.span_ns > 0
            await pilot.press("s")  # the schedule of the same kernel, from its sibling launch
            assert tab.view == "schedule" and tab.views["schedule"].schedule.blocks == 1024
            await pilot.press("down", "down")  # attention's block_sched launch
            assert tab.selected == f"{PID}:4" and tab.views["schedule"].schedule.blocks == 16 * 16
            await pilot.press("m")
            assert set(tab.views["dmat"].pointers) == {"q", "k", "v", "o"}
            labels = {
                line[:5].strip() for line in tab.views["dmat"].render().plain.splitlines()[2:-1]
            }
            assert labels == {"", "q", "k", "v", "o"}  # rows labelled by kernel argument

    _run(run())


def test_time_keys_act_on_the_view_shown() -> None:
    async def run() -> None:
        app = ProbesApp(replayed_model())
        async with app.run_test(size=(80, 24)) as pilot:
            tab = app.tab
            await pilot.pause()
            assert tab.check_action("align", ()) is None  # not on the schedule
            assert tab.check_action("zoom", (0.5,)) is None  # already the whole launch
            await pilot.press("z", "shift+right")
            assert tab.views["schedule"].zoom == 2 and tab.views["schedule"].pan > 0
            assert tab.views["dmat"].zoom == 1
            await pilot.press("m", "a", "z")
            assert tab.views["dmat"].align == "sm_clock" and tab.views["dmat"].zoom == 2
            assert "per-SM clock" in tab.views["dmat"].render().plain
            await pilot.press("a", "shift+left")
            assert (
                tab.views["dmat"].align == "global" and tab.views["dmat"].pan == 0.125
            )  # from 0.25, zoomed ×2

    _run(run())


def test_tab_without_launches_says_why() -> None:
    async def run() -> None:
        app = ProbesApp(replayed_model(), pid=4242)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert app.tab.table.row_count == 0
            assert str(app.tab.info.render()) == EMPTY
            assert "toggle the block_sched probe" in app.tab.views["schedule"].render().plain
            await pilot.press("t", "z")
            assert app.tab.views["tensorops"].zoom == 1

    _run(run())


def test_new_launches_arrive_live_and_keep_the_selection() -> None:
    async def run() -> None:
        model = replayed_model(until_launch=4)  # matmul only so far
        app = ProbesApp(model)
        async with app.run_test(size=(80, 24)) as pilot:
            tab = app.tab
            await pilot.pause()
            assert tab.table.row_count == 3
            await pilot.press("down")
            source = ReplaySource(Recording(RECORDING))
            source.paused = True
            source.seek(source.t_end)
            full = source.poll()
            model.apply(Update(batches=full.batches, entities=full.entities), source.now_ns())
            tab.show(model)
            await pilot.pause()
            assert tab.table.row_count == 6 and tab.selected == f"{PID}:2"

    _run(run())


def test_sibling_picks_the_same_kernel_nearest_in_time() -> None:
    found = data.launches(replayed_model(), PID)
    attention = [x for x in found if x.kernel == "attention_fwd_kernel"]
    sched = next(x for x in attention if x.probe == "block_sched")
    assert data.sibling(found, sched, "block_sched") is sched
    assert data.sibling(found, sched, "mem_trace").kernel == "attention_fwd_kernel"
    assert data.sibling(found, sched, "nope") is None


@pytest.mark.parametrize("launch", [1, 2, 3, 4, 5, 6])
def test_records_of_every_launch_come_back_from_the_model(launch: int) -> None:
    model = replayed_model()
    x = next(x for x in data.launches(model, PID) if x.launch == launch)
    rows = data.records(model, x)
    assert rows is not None and len(rows) == x.records


def test_probe_requests_show_until_launches_arrive() -> None:
    async def run() -> None:
        model = Model()
        app = ProbesApp(model, pid=77)
        async with app.run_test(size=(80, 24)) as pilot:
            refused = {
                "kernel": "^ampere_sgemm$",
                "probe": "block_sched",
                "on": True,
                "ok": False,
                "message": NO_PTX,
                "pid": 77,
            }
            entity = Entity("probe_control", "77:block_sched:^ampere_sgemm$", 1, refused)
            model.apply(Update(entities=[entity]), 1)
            app.tab.show(model)
            await pilot.pause()
            assert NO_PTX in str(app.tab.info.render())
            assert not data.is_on(model, 77, "ampere_sgemm", "block_sched")
            ok = {**refused, "kernel": "^mm$", "ok": True, "message": "on: probing"}
            model.apply(Update(entities=[Entity("probe_control", "77:b:mm", 2, ok)]), 2)
            assert data.is_on(model, 77, "mm", "block_sched")
            assert not data.is_on(model, 78, "mm", "block_sched")

    _run(run())


# --- words -------------------------------------------------------------------------------


def test_schedule_says_which_time_is_which_in_plain_words() -> None:
    """The kernel's wall time and the block time summed over its blocks are labelled as
    such (51.8 ms of block time beside a 0.215 ms kernel read as a contradiction), and
    each SM row's shares say what they are: no ``%sch``."""

    async def run() -> None:
        app = ProbesApp(replayed_model())
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            view = app.tab.views["schedule"]
            s = view.schedule
            lines = view.render().plain.splitlines()
            wall = f"{s.duration_ns / 1e6:.3f} ms"
            block = f"{s.per_sm.exec_ns.sum() / 1e6:.3f} ms"
            assert lines[0].endswith(f"kernel wall time {wall}") and wall == "0.215 ms"
            assert lines[1].startswith(f"block time {block} (1024 blocks' durations summed)")
            assert " sched " in lines[1] and lines[2].startswith("tail ")
            rows = [line for line in lines if "│" in line]
            assert len(rows) == 14  # every one of the 132 SMs, in groups, at 80x24
            assert all(" busy " in row and " sched " in row for row in rows)
            assert "sch" not in " ".join(lines).replace("sched", "")
            assert max(len(line) for line in lines[:-1]) <= view.size.width

    _run(run())


def test_help_and_legend_explain_the_schedule_words() -> None:
    async def run() -> None:
        app = GtopApp(frozen_replay(RECORDING, 4.5), refresh_s=0.05, start_pid=PID)
        async with app.run_test(size=(80, 24)) as pilot:
            await open_tab(pilot, "Probes")
            await pilot.press("question_mark")
            await pilot.pause()
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            for words in ("kernel wall time", "block time", "busy", "sched", "l explains"):
                assert words in help_screen.about.split("Probes: ")[1]
            about = help_screen.query_one("#about", Static)
            shown = about.size.height
            assert about.get_content_height(about.parent.size, app.size, about.size.width) == shown
            await pilot.press("l")
            await pilot.pause()
            assert isinstance(app.screen, LegendScreen)
            legend = legend_text().plain
            assert SCHED in legend and "Kernel wall time:" in legend and "Block time:" in legend

    _run(run())


def test_probed_launches_take_their_grid_from_the_traced_kernel() -> None:
    """A live probed launch's grid is unknown to the agent's hooks: the Grid column
    shows the traced launch's 16x16 (the Kernels tab's) instead of ``?``."""
    from gtop.core.layouts import KERNEL

    model = replayed_model()
    pid = 449
    live = [
        ProbeLaunch.from_value({**x.value(), "grid": [0, 0, 0], "block": [0, 0, 0]})
        for x in data.launches(model, pid)
    ]
    t = int(model.now_ns)
    rows = np.zeros(2, dtype=KERNEL.dtype)
    rows["t_ns"], rows["pid"], rows["name_id"] = [t - 2_000, t - 1_000], pid, [7, 7]
    rows["grid_x"], rows["grid_y"], rows["grid_z"] = [8, 16], [8, 16], 1
    rows["block_x"], rows["block_y"], rows["block_z"] = 256, 1, 1
    name = Entity("kernel_name", "7", t, {"name": "attention_fwd_kernel"})
    model.apply(Update(batches={"kernel": rows}, entities=[name]), t)
    shapes = data.geometry(model, pid, {"attention_fwd_kernel", "matmul_kernel"})
    assert shapes == {"attention_fwd_kernel": ((16, 16, 1), (256, 1, 1))}  # the newest
    filled = data.with_geometry(live, shapes)
    grids = {(x.kernel, x.grid) for x in filled}
    assert ("attention_fwd_kernel", (16, 16, 1)) in grids
    assert ("matmul_kernel", (0, 0, 0)) in grids  # never traced: stays unknown ("?")
