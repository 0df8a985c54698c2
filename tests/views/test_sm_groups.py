"""The per-SM schedule at 80x24 over the real probed recording (probes_triton.gtop, H100,
132 SMs): with few rows free, one row per group of SMs so every SM shows; g toggles."""

from __future__ import annotations

import asyncio

from gtop.views.widgets.sm_schedule import SmSchedule
from tests.probes.test_probes_tab import ProbesApp, replayed_model


def test_every_sm_shows_at_80x24() -> None:
    async def run() -> None:
        app = ProbesApp(replayed_model())
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            view = app.tab.views["schedule"]
            assert isinstance(view, SmSchedule) and view.schedule is not None
            rows = [line for line in view.render().plain.splitlines() if "│" in line]
            assert rows[0].startswith("SM   0-9") and rows[-1].startswith("SM 130-131")  # 14
            assert view.row_count() == len(rows)  # every SM on screen at once
            view.focus()
            await pilot.press("g")
            rows = [line for line in view.render().plain.splitlines() if "│" in line]
            assert rows[0].startswith("SM    0   │") and len(rows) < 132

    asyncio.run(run())
