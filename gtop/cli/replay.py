"""``gtop replay`` and ``gtop demo``: a recording played in the UI."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from gtop.cli.common import UserError, check_theme, headless, open_recording, print_frame, run_ui
from gtop.cli.parser import Config

DEMO_RECORDING = "loader-1-worker.gtop"


def replay_source(config: Config, at_window: bool = True):  # -> ReplaySource
    """The recording ``config.file`` played from ``--at`` (on the overview); by default
    paused at the end of the window ``gtop report`` covers (the steady state of its GPU
    work) on the target's process screen, where the views cover that window
    (``at_window`` false: played from its start)."""
    from gtop.session.replay import ReplaySource

    assert config.file is not None
    source = ReplaySource(open_recording(config.file))
    if config.at_s is not None:
        source.seek(source.t_start + int(config.at_s * 1e9))
    elif at_window:
        source.open_at_answer()
    return source


def cmd_replay(config: Config) -> int:
    check_theme(config)
    if config.compare is not None:
        with open_recording(config.compare):
            pass  # a missing or damaged file says so in one line now, not in the UI
    if headless(config):
        return print_frame(replay_source(replace(config, once=True)), config, 0.0)
    return run_ui(replay_source(config), config)


def demo_recording() -> Path:
    """The recording `gtop demo` plays: ``GTOP_DEMO`` if set, else the one packaged in
    ``gtop/demo/`` (``recordings/`` links to it in the repository).

    Raises:
        UserError: it is not there.
    """
    override = os.environ.get("GTOP_DEMO")
    path = (
        Path(override)
        if override
        else Path(__file__).resolve().parents[1] / "demo" / DEMO_RECORDING
    )
    if not path.is_file():
        raise UserError(f"no recording at {path}; set GTOP_DEMO=FILE.gtop")
    return path


def cmd_demo(config: Config) -> int:
    return cmd_replay(replace(config, file=demo_recording()))
