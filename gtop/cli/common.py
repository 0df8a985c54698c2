"""What the commands share: the one-line user error, opening a recording, and showing a
source (the UI, or one frame when stdout is not a terminal)."""

from __future__ import annotations

import sys
from pathlib import Path

from gtop.cli.parser import Config


class UserError(Exception):
    """A failure to report as one line (no traceback)."""


def open_recording(path: Path):  # -> Recording
    from gtop.recordings.reader import Recording, RecordingError

    try:
        return Recording(path)
    except RecordingError as exc:
        raise UserError(str(exc)) from None


def headless(config: Config) -> bool:
    """Print one frame instead of the UI: asked for, or stdout is not a terminal."""
    return config.once or not sys.stdout.isatty()


def print_frame(source, config: Config, settle_s: float) -> int:
    from gtop.headless import print_once

    if not config.once:
        print("gtop: stdout is not a terminal: one frame as text (as --once)", file=sys.stderr)
    return print_once(filtered(source, config), settle_s, config.json, config.gpus)


def filtered(source, config: Config):  # -> Source
    if config.gpus is None:
        return source
    from gtop.session.gpu_subset import GpuSubset

    return GpuSubset(source, config.gpus)


def check_theme(config: Config) -> None:
    if config.theme is None:
        return
    from gtop.views.app import theme_names

    if config.theme not in theme_names():
        raise UserError(f"no theme {config.theme!r}; one of: {', '.join(theme_names())}")


def run_ui(source, config: Config) -> int:
    from gtop.views.app import run_app

    start_pid = config.pid if config.pid is not None else getattr(source, "pid", None)
    return run_app(
        filtered(source, config),
        theme=config.theme,
        no_color=config.no_color,
        start_pid=start_pid,
        refresh_s=min(0.5, config.interval_s),
        compare=config.compare,
    )
