"""One key map: the replay keys work on every tab whatever is focused, tabs zoom with
their own keys, no key is lost right after a tab switch, and ``?`` explains the screen."""

from __future__ import annotations

import pytest

from gtop.views.screens.help import HelpScreen
from gtop.views.screens.legend import LegendScreen
from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs.streams_tab import StreamsTab
from gtop.views.tabs.threads_tab import ThreadsTab
from tests.views.conftest import SIZE, AppFactory
from tests.views.test_process_tabs import CONSTRUCTED_IO, IO_AT_S, IO_PID, open_tab

TABS = ["GPUs", "Children", "Kernels", "Streams", "Threads", "GPU time", "Swimlanes", "Probes"]


@pytest.mark.parametrize("title", TABS)
async def test_replay_keys_work_on_every_tab(replay_app: AppFactory, title: str) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, title)
        await pilot.pause()
        rp = app.replay
        assert rp is not None
        start, speed = rp.playhead, rp.speed
        await pilot.press("left")
        assert rp.playhead == start - 5_000_000_000, app.screen.focused
        await pilot.press("right")
        assert rp.playhead == start
        await pilot.press("plus")
        assert rp.speed > speed
        await pilot.press("minus")
        assert rp.speed == speed
        await pilot.press("end")
        assert rp.at_end
        await pilot.press("home")
        assert rp.playhead == rp.t_start
        paused = rp.paused
        await pilot.press("space")
        assert rp.paused != paused


async def test_no_key_is_lost_after_a_tab_switch(replay_app: AppFactory) -> None:
    """Keys pressed back to back, with no pause for the tabs to draw: every ``]`` moves
    on, and the tab's own key reaches the tab just opened."""
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "GPUs")
        screen = app.screen
        assert isinstance(screen, ProcessScreen)
        await pilot.press(*["right_square_bracket"] * 3, "z")
        streams = screen.query_one(StreamsTab)
        assert screen._panels[screen.tabs.active] is streams
        assert streams.timeline.window_ns == 500_000_000  # z zoomed in from 1 s
        await pilot.press("right_square_bracket", "o")
        threads = screen.query_one(ThreadsTab)
        assert screen._panels[screen.tabs.active] is threads
        assert threads.mode == "off-CPU"


async def test_help_explains_the_screen_and_takes_focus(replay_app: AppFactory) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "GPU time")
        await pilot.press("question_mark")
        await pilot.pause()
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert "GPU time:" in help_screen.about and "busy share" in help_screen.about
        assert help_screen.focused is not None
        keys = [k.key for k in help_screen.keys]
        assert len(keys) == len(set(keys))  # each key listed once
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LegendScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen)
