"""Snapshots of the process screen's analysis tabs at 80×24, over real recordings frozen
in place (update with ``pytest tests/views --snapshot-update`` and review the SVGs)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from tests.views.conftest import SIZE, AppFactory
from tests.views.test_process_tabs import CONSTRUCTED_IO, IDLE_PID, IO_AT_S, IO_PID, open_tab


def opened(title: str):
    async def run_before(pilot: Pilot) -> None:
        pilot.app.animation_level = "none"  # the tab underline slides otherwise
        await open_tab(pilot, title)
        for box in pilot.app.query(Input):
            box.cursor_blink = False
        deadline = time.monotonic() + 20  # a bound on a hang, not a wait for drawing
        while time.monotonic() < deadline and not pilot.app.screen.ready():
            await pilot.pause(0.02)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize(
    "title",
    ["Kernels", "Streams", "Threads", "GPU time", "Swimlanes"],
    ids=lambda t: t.replace(" ", "_"),
)
def test_constructed_io_tab(snap_compare, replay_app: AppFactory, title: str) -> None:
    app = replay_app(CONSTRUCTED_IO, at_s=IO_AT_S, start_pid=IO_PID)
    assert snap_compare(app, terminal_size=SIZE, run_before=opened(title))


@pytest.mark.parametrize("title", ["Kernels", "GPU time"], ids=lambda t: t.replace(" ", "_"))
def test_nvml_only_tab(snap_compare, replay_app: AppFactory, idle_busy_idle: Path, title) -> None:
    app = replay_app(idle_busy_idle, at_s=20.0, start_pid=IDLE_PID)
    assert snap_compare(app, terminal_size=SIZE, run_before=opened(title))
