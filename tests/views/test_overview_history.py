"""The overview gives the height the process table does not need to the GPUs' history,
over a real recording (idle_busy_idle.gtop: one H200, one process)."""

from __future__ import annotations

from pathlib import Path

from gtop.views.screens.overview import MAX_CHART_ROWS, OverviewScreen
from gtop.views.widgets.gpu_panel import GpuPanel
from tests.views.conftest import AppFactory
from tests.views.test_snapshots import settle


async def test_history_fills_the_height(replay_app: AppFactory, idle_busy_idle: Path) -> None:
    for size, rows in (((200, 60), MAX_CHART_ROWS), ((80, 24), 10)):
        app = replay_app(idle_busy_idle, at_s=14.0)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, OverviewScreen)
            panel = screen.query_one(GpuPanel)
            assert panel.chart_rows == rows
            lines = panel.render().plain.splitlines()
            assert len(lines) == 3 + rows and lines[rows].lstrip().startswith("util")
            assert "█" in "".join(lines[1:rows])  # the busy phase stands rows tall
            assert screen.table.region.height >= 3  # header and the process still show
