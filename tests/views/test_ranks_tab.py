"""The Ranks tab on a real 2-rank recording (rank 1 sleeps 20 ms per step), and its
absence from a single-process one."""

from __future__ import annotations

import json
from pathlib import Path

from gtop.recordings.reader import Recording
from gtop.views.screens.process import ProcessScreen
from tests.views.conftest import AppFactory
from tests.views.test_process_tabs import SIZE, open_tab, settle_panel

RECORDINGS = Path(__file__).parents[2] / "recordings"
DDP = RECORDINGS / "ddp-straggler-cpu.gtop"


def _at_end_of_steps() -> tuple[float, int]:
    truth = json.loads(DDP.with_suffix(".json").read_text())
    with Recording(DDP) as rec:
        t0, _ = rec.time_range()
    return (truth["window_ns"][1] - t0) / 1e9 + 0.2, truth["ranks"]["0"]["pid"]


async def test_ranks_tab_names_the_slow_rank(replay_app: AppFactory) -> None:
    at_s, pid = _at_end_of_steps()
    app = replay_app(DDP, at_s=at_s, start_pid=pid)
    async with app.run_test(size=SIZE) as pilot:
        panel = await open_tab(pilot, "Ranks")
        await settle_panel(pilot, panel)
        text = str(panel.verdict.render())
        result = panel.result
    assert "Slowest rank: 1" in text
    assert [e["rank"] for e in result["ranks"]] == [0, 1]
    assert (
        result["ranks"][0]["straggler_wait_share"]
        > 0.1
        > result["ranks"][1]["straggler_wait_share"]
    )


async def test_no_ranks_tab_for_one_process(replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=14.0)
    async with app.run_test(size=SIZE) as pilot:
        while not app.screen.query("ProcessTable"):
            await pilot.pause(0.02)
        table = app.screen.query_one("ProcessTable")
        await pilot.pause(0.2)
        table.focus()
        await pilot.press("enter")
        while not isinstance(app.screen, ProcessScreen):
            await pilot.pause(0.02)
        await pilot.pause(0.3)
        screen = app.screen
        titles = {str(tab.label.plain): tab.display for tab in screen.query("Tab") if tab.id}
    assert titles.get("Ranks") is False
    assert titles.get("Kernels") is True
