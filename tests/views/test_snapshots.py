"""Snapshots of every screen at 80×24, built from real recordings frozen in place.

Update after an intended change with ``pytest tests/views --snapshot-update`` and review
the SVGs in tests/views/__snapshots__/.
"""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from tests.views.conftest import HOST_FAMILY, SIZE, AppFactory, Replicate

TRAIN_PID = 501
"""The training process in recordings/train_loop_nvml.gtop."""


async def settle(pilot: Pilot) -> None:
    """Wait until the current screen shows the model, and stop every cursor blinking."""
    app = pilot.app
    while app.shown is None or app.shown != (app.model.generation, app.screen):
        await pilot.pause(0.02)
    await pilot.pause()
    for box in pilot.app.query(Input):
        box.cursor_blink = False
    await pilot.pause()


def test_overview_busy_gpu(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=14.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_overview_training_loop(snap_compare, replay_app: AppFactory, train_loop: Path) -> None:
    app = replay_app(train_loop, at_s=15.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_overview_no_color(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=14.0, no_color=True)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_overview_host_only(snap_compare, replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_process_screen(snap_compare, replay_app: AppFactory, train_loop: Path) -> None:
    app = replay_app(train_loop, at_s=15.0, start_pid=TRAIN_PID)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_process_screen_children(snap_compare, replay_app: AppFactory) -> None:
    async def children_tab(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("right_square_bracket")
        await pilot.pause()

    app = replay_app(HOST_FAMILY, at_s=3.0, start_pid=21028)
    assert snap_compare(app, terminal_size=SIZE, run_before=children_tab)


def test_filter_and_sort(snap_compare, replay_app: AppFactory) -> None:
    async def filtered(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("s", "s", "s", "s", "slash", *"sleep")
        await settle(pilot)

    app = replay_app(HOST_FAMILY, at_s=3.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=filtered)


def test_replay_bar_at_end_fast(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    async def end_fast(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("end", "plus", "plus")
        await pilot.pause()

    app = replay_app(idle_busy_idle, at_s=0.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=end_fast)


def test_help_screen(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    async def help_open(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    app = replay_app(idle_busy_idle, at_s=14.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=help_open)


def test_overview_eight_gpus(
    snap_compare,
    replay_app: AppFactory,
    idle_busy_idle: Path,
    tmp_path: Path,
    replicate: Replicate,
) -> None:
    """8 GPUs and 200 processes (the benchmark's load): the GPU area scrolls."""
    scaled = replicate(idle_busy_idle, tmp_path / "eight_gpus.gtop", gpus=8, procs=200)
    app = replay_app(scaled, at_s=14.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)
