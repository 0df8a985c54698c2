"""Snapshots of every screen at 80×24, built from real recordings frozen in place.

Update after an intended change with ``pytest tests/views --snapshot-update`` and review
the SVGs in tests/views/__snapshots__/.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Input

from tests.views.conftest import HOST_FAMILY, SIZE, AppFactory, Replicate

TRAIN_PID = 501
"""The training process in recordings/train_loop_nvml.gtop."""


async def settle(pilot: Pilot) -> None:
    """Wait until the current screen shows the model and says it is drawn (its
    ``ready()``: a data-ready signal, never a time), stop every cursor blinking, then
    until two frames in a row are the same (work deferred to after a refresh, such as
    the focus a newly opened tab moves into its table, has landed: a CI run under load
    once took its shot before)."""
    app = pilot.app
    while app.shown != (app.model.generation, app.screen) or not app.screen.ready():
        await pilot.pause(0.02)
    await pilot.pause()
    for box in pilot.app.query(Input):
        box.cursor_blink = False
    await pilot.pause()
    frame = app.export_screenshot()
    for _ in range(50):
        await pilot.pause()
        frame, before = app.export_screenshot(), frame
        if frame == before:
            return
    raise AssertionError("the screen kept changing after it said it was ready")


RunBefore = Callable[[Pilot], Awaitable[None]]


def shot(snap_compare, app: App, run_before: RunBefore = settle) -> bool:
    """Whether ``app`` at 80×24 matches its snapshot, once ``run_before`` has run."""
    return snap_compare(app, terminal_size=SIZE, run_before=run_before)


def pressing(*keys: str) -> RunBefore:
    """Settle, press ``keys``, and let the app take them in."""

    async def run_before(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_overview_busy_gpu(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=14.0)
    assert shot(snap_compare, app)


def test_overview_training_loop(snap_compare, replay_app: AppFactory, train_loop: Path) -> None:
    app = replay_app(train_loop, at_s=15.0)
    assert shot(snap_compare, app)


def test_overview_no_color(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=14.0, no_color=True)
    assert shot(snap_compare, app)


def test_overview_host_only(snap_compare, replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0)
    assert shot(snap_compare, app)


def test_process_screen(snap_compare, replay_app: AppFactory, train_loop: Path) -> None:
    app = replay_app(train_loop, at_s=15.0, start_pid=TRAIN_PID)
    assert shot(snap_compare, app)


def test_process_screen_children(snap_compare, replay_app: AppFactory) -> None:
    app = replay_app(HOST_FAMILY, at_s=3.0, start_pid=21028)
    assert shot(snap_compare, app, pressing("right_square_bracket"))


def test_filter_and_sort(snap_compare, replay_app: AppFactory) -> None:
    async def filtered(pilot: Pilot) -> None:
        await settle(pilot)
        await pilot.press("s", "s", "s", "s", "slash", *"sleep")
        await settle(pilot)

    app = replay_app(HOST_FAMILY, at_s=3.0)
    assert shot(snap_compare, app, filtered)


def test_replay_bar_at_end_fast(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=0.0)
    assert shot(snap_compare, app, pressing("end", "plus", "plus"))


def test_help_screen(snap_compare, replay_app: AppFactory, idle_busy_idle: Path) -> None:
    app = replay_app(idle_busy_idle, at_s=14.0)
    assert shot(snap_compare, app, pressing("question_mark"))


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
    assert shot(snap_compare, app)
