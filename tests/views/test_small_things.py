"""The small things of issue 24, over real recordings replayed through the UI: a greyed key
says why in the footer, Esc closes a detail before it leaves the screen, a CUDA graph's
row is not offered probes, the window a replay opens at and ``w``."""

from __future__ import annotations

import time

from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.widgets.key_hints import KeyHints
from gtop.views.widgets.row_table import RowTable
from tests.views.conftest import REPO, SIZE, AppFactory
from tests.views.test_process_tabs import open_tab, settle_panel

GRAPHS = REPO / "recordings" / "fixes" / "decode-graphs.gtop"
GRAPHS_PID = 747


async def test_kernels_keys_say_why_and_esc_closes_the_name_first(
    replay_app: AppFactory,
) -> None:
    app = replay_app(GRAPHS, at_s=8.0, start_pid=GRAPHS_PID)
    async with app.run_test(size=SIZE) as pilot:
        tab = await open_tab(pilot, "Kernels")
        assert isinstance(tab, KernelsTab)
        await settle_panel(pilot, tab)
        footer = str(app.screen.query_one(KeyHints).render())
        assert footer.startswith(" g/b/m/t live only "), footer  # greyed in a replay, and why
        table = tab.kernels.query_one(RowTable)
        table.focus()
        rows = [r.name for r in tab.kernels.shown]
        graph = next(i for i, name in enumerate(rows) if name.startswith("CUDA graph"))
        table.move_cursor(row=graph)
        await pilot.press("enter")
        await pilot.pause()
        detail = str(tab.detail.render())
        assert "a CUDA graph launch" in detail and "no PTX" not in detail, detail
        await pilot.press("escape")  # closes the name, stays on the screen
        await pilot.pause()
        assert isinstance(app.screen, ProcessScreen) and not tab.detail.display
        await pilot.press("escape")  # now leaves it
        await pilot.pause()
        assert not isinstance(app.screen, ProcessScreen)


async def test_w_goes_to_the_reports_window_and_back(replay_app: AppFactory) -> None:
    app = replay_app(GRAPHS, at_s=2.0, start_pid=GRAPHS_PID)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_tab(pilot, "GPU time") and app.screen
        source = app.source
        assert not source.at_window
        await pilot.press("w")
        assert source.at_window and source.paused
        deadline = time.monotonic() + 60
        while not screen.verdict.line().startswith("steady 4.1–8.5 s · GPU-bound"):
            assert time.monotonic() < deadline, screen.verdict.line()
            await pilot.pause(0.05)
        await pilot.press("w")
        assert not source.at_window
        assert source.position_s == 2.0
