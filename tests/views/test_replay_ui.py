"""Pilot tests over real recordings: keys, sorting, filter, drill-in, help, palette and
the replay controls, at 80×24."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import Input

from gtop.views import tabs
from gtop.views.processes import COLUMN_KEYS
from gtop.views.screens.help import HelpScreen
from gtop.views.screens.overview import OverviewScreen
from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs import panels
from gtop.views.widgets.gpu_panel import GpuPanel
from gtop.views.widgets.status_line import StatusLine
from tests.views.conftest import HOST_FAMILY, SIZE, AppFactory, Replicate

PARENT, CHILD = 21028, 21030
"""The processes in HOST_FAMILY."""


async def test_overview_lists_recorded_processes(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, OverviewScreen)
        assert set(app.screen.table.visible_pids) == {PARENT, CHILD}
        assert isinstance(app.focused, type(app.screen.table))


async def test_gpu_panel_shows_recorded_gpu(replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=12.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = str(app.screen.query_one(GpuPanel).render())
        assert "NVIDIA H200" in text
        assert "util" in text and "throttle" in text
        assert app.screen.table.visible_pids == [466]


async def test_sort_keys_cycle_and_reverse(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.table
        assert table.sort_key == "gpu_mem"
        await pilot.press("s")
        assert table.sort_key == COLUMN_KEYS[COLUMN_KEYS.index("gpu_mem") + 1]
        while table.sort_key != "pid":
            await pilot.press("s")
        assert table.visible_pids == [PARENT, CHILD]
        await pilot.press("S")
        assert table.sort_reverse
        assert table.visible_pids == [PARENT, CHILD]  # a tree: the child stays under it
        await pilot.press("t")
        assert table.visible_pids == [CHILD, PARENT]  # flat
        assert "PID▼" in str(table.columns["pid"].label)
        while table.sort_key != "rss":
            await pilot.press("s")
        assert table.visible_pids[0] == PARENT  # the parent hoards memory


async def test_clicking_a_header_sorts(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.table
        region = table.region
        await pilot.click(offset=(region.x + 2, region.y))  # the PID header
        assert table.sort_key == "pid"
        await pilot.click(offset=(region.x + 2, region.y))
        assert table.sort_reverse


async def test_filter_and_escape(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.table
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"sleep")
        assert table.visible_pids == [CHILD]
        await pilot.press("enter")
        assert app.focused is table
        assert table.visible_pids == [CHILD]
        await pilot.press("slash", "escape")
        assert table.filter_text == ""
        assert set(table.visible_pids) == {PARENT, CHILD}
        assert not app.query_one("#filter").has_class("-active")
        await pilot.press("slash", *str(PARENT))
        assert table.visible_pids == [PARENT]


async def test_cursor_keys_and_drill_in_and_back(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.table
        table.sort_key = "pid"
        await pilot.press("G")
        assert table.cursor_row == 1
        await pilot.press("k")
        assert table.cursor_row == 0
        await pilot.press("j", "g")
        assert table.cursor_row == 0
        await pilot.press("j", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)
        assert app.screen.pid == CHILD
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)
        await pilot.press("backspace")
        assert isinstance(app.screen, OverviewScreen)


async def test_start_pid_opens_process_screen_with_children(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0, start_pid=PARENT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProcessScreen) and screen.pid == PARENT
        summary = str(screen.query_one("ProcessSummary").render())
        assert f"PID {PARENT}" in summary and "make_host_recording.py" in summary
        await pilot.press("right_square_bracket")
        await pilot.pause()
        children = screen.query_one("ProcessChildren").table
        assert children.visible_pids == [CHILD]
        children.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and app.screen.pid == CHILD
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_children_tab_says_when_there_are_none(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0, start_pid=CHILD)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("right_square_bracket")
        await pilot.pause()
        children = app.screen.query_one("ProcessChildren")
        assert children.note.display and not children.table.display
        assert "no child processes seen" in str(children.note.render())


async def test_help_lists_keys(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        described = {k.description: k for k in app.screen.keys}
        expected = ("Quit", "Help", "Sort", "Filter", "Pause", "Forward 5 s", "Slower replay")
        for desc in expected:
            assert desc in described, desc
        assert "Record" not in described  # live only: hidden in a replay
        assert described["Down"].key == "j"
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_palette_sorts_and_seeks(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"sort processes by RSS")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.table.sort_key == "rss"
        await pilot.press("ctrl+p", *"seek to end")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.source.at_end


async def test_replay_controls(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    src = app.source
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert src.paused
        assert src.position_s == pytest.approx(3.0)
        await pilot.press("right")
        assert src.position_s == pytest.approx(min(8.0, src.duration_s))
        await pilot.press("home")
        assert src.position_s == 0
        await pilot.press("right")
        assert src.position_s == pytest.approx(5.0)
        await pilot.press("left")
        assert src.position_s == 0
        await pilot.press("full_stop", "full_stop")
        assert src.position_s == pytest.approx(0.4)  # two 0.2 s intervals
        await pilot.press("comma")
        assert src.position_s == pytest.approx(0.2)
        await pilot.press("end")
        assert src.at_end
        for _ in range(10):
            await pilot.press("plus")
        assert src.speed == 16
        for _ in range(10):
            await pilot.press("minus")
        assert src.speed == 0.25
        await pilot.press("space")
        assert not src.paused
        await pilot.pause()
        assert not app.screen.query_one(StatusLine).status.paused
        await pilot.press("space")
        await pilot.pause()
        assert src.paused and app.screen.query_one(StatusLine).status.paused


async def test_time_bar_click_seeks(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        bar = app.screen.query_one("TimeBar")
        head, width, _ = bar._layout(bar.playback)
        x = bar.region.x + 1 + head.cell_len + width // 2
        await pilot.click(offset=(x, bar.region.y))
        assert app.source.position_s == pytest.approx(app.source.duration_s / 2, rel=0.1)


async def test_replay_keys_do_not_steal_typing(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", "h", "l", "left", "plus")
        assert app.query_one("#filter", Input).value == "h+l"  # ← moved the text cursor
        assert app.source.position_s == pytest.approx(3.0)
        assert app.source.speed == 1


async def test_replay_plays_through_the_ui(replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=0.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space", *["plus"] * 4)
        await pilot.pause(0.5)
        assert app.source.position_s > 2.0  # ×16
        assert app.model.window("gpu", 60) is not None


async def test_drops_are_always_shown(replay_app: AppFactory, tmp_path: Path) -> None:
    """A recording with a damaged chunk: the status line says so as the report does (a
    problem of the file, not a drop)."""
    damaged = tmp_path / "damaged.gtop"
    shutil.copy(HOST_FAMILY, damaged)
    with sqlite3.connect(damaged) as db:
        db.execute("UPDATE chunks SET data = zeroblob(length(data)) WHERE stream = 'proc_host'")
    app = replay_app(damaged, at_s=3.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        line = str(app.screen.status_line.render())
        assert re.search(r"replay: ⚠ problem: .*chunk \d+", line), line
        assert "drops" not in line
        assert app.screen.table.visible_pids == []


ECHO_TAB = '''"""A tab a later feature might add: it shows the generation it was given."""

from textual.widgets import Static

from gtop.core.model import Model
from gtop.views.tabs.panels import PanelSpec


class PidEcho(Static):
    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.seen = -1

    def show(self, model: Model) -> None:
        self.seen = model.generation
        self.update(f"echo {self.pid} at {model.generation}")


PANEL = PanelSpec("Echo", PidEcho, order=15)
'''


async def test_a_tab_is_one_file(
    replay_app: AppFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A module that names a PANEL, in the tabs' folder (here one added to its path),
    becomes a tab of the process screen."""
    (tmp_path / "echo_tab.py").write_text(ECHO_TAB)
    monkeypatch.setattr(tabs, "__path__", [*tabs.__path__, str(tmp_path)])
    assert [p.title for p in panels.process_panels()][:3] == ["GPUs", "Echo", "Children"]
    app = replay_app(HOST_FAMILY, at_s=3.0, start_pid=PARENT)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not app.screen.query("PidEcho")  # a tab not opened yet: not mounted nor drawn
        await pilot.press("right_square_bracket")
        await pilot.pause()
        echo = app.screen.query_one("PidEcho")
        assert echo.seen == app.model.generation and echo.pid == PARENT


async def test_gpu_area_scrolls_by_keyboard(
    replay_app: AppFactory, idle_busy_idle: Path, tmp_path: Path, replicate: Replicate
) -> None:
    scaled = replicate(idle_busy_idle, tmp_path / "eight.gtop", gpus=8, procs=16)
    app = replay_app(scaled, at_s=14.0)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        box = app.screen.gpu_box
        assert len(app.screen.query(GpuPanel)) == 8
        assert box.max_scroll_y > 0
        await pilot.press("shift+tab")
        assert app.focused is box
        await pilot.press("pagedown")
        assert box.scroll_y > 0
