"""Keys answer while the analysis runs (issue 16), over a real CUPTI recording
(decode-eager.gtop: ~0.7 M CUDA API calls in its last 2 s, at 0:05.5, its end, so
Swimlanes takes a while to build its lanes): opening Swimlanes paints its "computing…"
mark at once, other keys are answered while its worker computes, then its lanes replace
the mark; a seek says "computing…" in the time bar until its history is in. Keys are sent with
:mod:`gtop.views.answer`, which returns when the key's frame is painted without waiting
for worker threads."""

from __future__ import annotations

import asyncio
import time

from gtop.views import answer
from gtop.views.app import GtopApp
from gtop.views.screens.legend import LegendScreen
from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs.swimlanes_tab import SwimlanesTab
from gtop.views.tabs.worker_panel import COMPUTING
from gtop.views.widgets.time_bar import LOADING
from tests.views.conftest import REPO, SIZE, AppFactory
from tests.views.test_process_tabs import open_tab, settle_panel

DECODE = REPO / "recordings" / "decode-eager.gtop"
DECODE_PID = 2257
"""The process that ran the recording's kernels."""


async def until(condition: object, seconds: float = 30.0) -> None:
    """Wait (yielding to the app) until ``condition()`` holds."""
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def tab_title(app: GtopApp) -> str:
    screen = app.screen
    assert isinstance(screen, ProcessScreen)
    return str(screen.tabs.get_tab(screen.tabs.active).label.plain)


async def test_a_tab_computes_while_keys_are_answered(replay_app: AppFactory) -> None:
    app = replay_app(DECODE, at_s=5.5, start_pid=DECODE_PID)
    async with app.run_test(size=SIZE) as pilot:
        gpu_time = await open_tab(pilot, "GPU time")
        await settle_panel(pilot, gpu_time)  # type: ignore[arg-type]
        await answer.press(app, "right_square_bracket")
        assert tab_title(app) == "Swimlanes"
        tab = app.screen.query_one(SwimlanesTab)
        assert tab.busy and str(tab.note.render()) == COMPUTING and tab.note.display
        # the UI thread is free: a dialog opens and closes while the worker computes
        await answer.press(app, "l")
        assert isinstance(app.screen, LegendScreen)
        assert tab.busy, "the legend waited for the analysis"
        await answer.press(app, "escape")
        assert tab_title(app) == "Swimlanes"
        await until(lambda: tab.settled())
        await answer.settle(app)
        assert str(tab.note.render()) != COMPUTING
        labels = [lane.label for lane in tab.lanes.lanes]
        assert labels[0].startswith("GPU0 s") and f"T{DECODE_PID}" in labels
        assert "GPU0 s" in tab.lanes.render().plain


async def test_a_seek_says_computing_until_its_history_is_in(replay_app: AppFactory) -> None:
    app = replay_app(DECODE, at_s=0.5, start_pid=DECODE_PID)
    async with app.run_test(size=SIZE) as pilot:
        await open_tab(pilot, "GPUs")
        screen = app.screen
        assert isinstance(screen, ProcessScreen) and screen.time_bar is not None
        generation = app.model.generation
        await answer.press(app, "right")
        assert app.loading and LOADING in screen.time_bar.render().plain
        assert app.model.generation == generation  # the history is read on the worker
        await until(lambda: not app.loading and not app.polling)
        await answer.settle(app)
        assert app.model.generation > generation
        assert LOADING not in screen.time_bar.render().plain
        assert screen.time_bar.render().plain.split()[2] == "0:05.5"  # 0.5 s + 5 s: its end
