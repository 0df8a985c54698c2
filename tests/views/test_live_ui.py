"""Pilot tests over the live source on this machine (no GPU: real host data of this test
process), including `R` writing a real recording."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gtop.recordings.reader import Recording
from gtop.session.live import LiveSource
from gtop.views.app import GtopApp
from gtop.views.screens.overview import OverviewScreen
from gtop.views.screens.process import ProcessScreen
from gtop.views.widgets.key_hints import KeyHints
from gtop.views.widgets.process_table import EXITED_GLYPH, EXITED_STYLE
from tests.views.conftest import HOST_FAMILY, SIZE, AppFactory


def live_app(**kw: object) -> GtopApp:
    source = LiveSource(pid=os.getpid(), interval_s=0.1, require_gpu=False)
    return GtopApp(source, refresh_s=0.05, **kw)


async def wait_for(condition, timeout: float = 10.0) -> None:
    """Poll ``condition`` until it holds (live data arrives on collector threads)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


async def test_live_overview_shows_this_process() -> None:
    app = live_app()
    async with app.run_test(size=SIZE):
        await wait_for(lambda: os.getpid() in app.screen.table.visible_pids)
        assert isinstance(app.screen, OverviewScreen)
        assert "No GPU data" in str(app.screen.query_one("#no-gpu").render())
        assert app.screen.time_bar is None


async def test_live_pid_opens_process_screen() -> None:
    app = live_app(start_pid=os.getpid())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, ProcessScreen))
        summary = app.screen.summary
        await wait_for(lambda: summary.history is not None and len(summary.history.host_rows) > 1)
        assert f"PID {os.getpid()}" in str(summary.render())
        await pilot.press("escape")
        assert isinstance(app.screen, OverviewScreen)


async def test_space_freezes_display_while_collecting() -> None:
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.screen.table.row_count > 0)
        await pilot.press("space")
        assert app.display_paused
        shown = app.shown
        applied = app.model.generation
        await wait_for(lambda: app.model.generation > applied + 2)
        assert app.shown == shown  # no redraw while paused
        assert app.screen.status_line.status.paused
        await pilot.press("space")
        await wait_for(lambda: app.shown != shown)


async def test_r_records_to_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: app.screen.table.row_count > 0)
        await pilot.press("R")
        await wait_for(lambda: app.source.recorder is not None and not app.recording_busy)
        await wait_for(lambda: app.source.recorder.rows() > 0)
        await pilot.pause(0.1)
        assert "REC" in str(app.screen.status_line.render())
        await pilot.press("R")
        await wait_for(lambda: app.source.recorder is None and not app.recording_busy)
    files = list(tmp_path.glob("*.gtop"))
    assert len(files) == 1
    with Recording(files[0]) as rec:
        rows = rec.read("proc_host")
        assert os.getpid() in set(rows["pid"].tolist())
        assert rec.meta["closed"]


async def test_r_is_hidden_in_replay(replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY)
    async with app.run_test(size=SIZE) as pilot:
        assert app.controls is None
        assert app.check_action("record", ()) is False
        await pilot.press("R")
        assert not app.recording_busy
        assert "Record" not in app.screen.query_one(KeyHints).render().plain


async def test_replay_keys_are_hidden_live() -> None:
    app = live_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.check_action("seek", (1,)) is False
        await pilot.press("right", "plus")
        assert app.check_action("record", ()) is True


async def test_no_color() -> None:
    app = live_app(no_color=True)
    async with app.run_test(size=SIZE):
        assert app.no_color


async def test_exited_target_is_greyed_and_marked() -> None:
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.8)"])
    source = LiveSource(pid=target.pid, interval_s=0.1, require_gpu=False)
    app = GtopApp(source, refresh_s=0.05)
    try:
        async with app.run_test(size=SIZE):
            table = app.screen.table
            await wait_for(lambda: target.pid in table.visible_pids)
            target.wait()
            key = str(target.pid)
            await wait_for(lambda: table.get_row(key)[0].plain.startswith(EXITED_GLYPH))
            cell = table.get_row(key)[0]
            assert cell.plain == f"{EXITED_GLYPH}{target.pid}"
            assert cell.style == EXITED_STYLE
    finally:
        target.kill()
        target.wait()
