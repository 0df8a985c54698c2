"""``gtop``, ``gtop run`` and ``gtop serve``: a live source (a launched command, a pid, or
every GPU) shown in the UI, as one frame, or served as OpenMetrics."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from gtop.cli.common import UserError, check_theme, filtered, headless, print_frame, run_ui
from gtop.cli.parser import Config
from gtop.cli.replay import replay_source

PF_KTHREAD = 0x00200000
"""``/proc/PID/stat`` flags: a kernel thread."""


ONCE_SETTLE_S = 1.0
"""``--once`` live: how long collectors run before the frame (at least two samples)."""


def _check_target(pid: int) -> None:
    """Refuse a pid with nothing to profile: a zombie or a kernel thread."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return  # gone or unreadable: the collectors say so
    if fields[0] in ("Z", "X"):
        raise UserError(
            f"pid {pid} has exited (a zombie its parent, pid {fields[1]}, has not reaped); "
            "nothing to profile"
        )
    if int(fields[6]) & PF_KTHREAD:
        raise UserError(f"pid {pid} is a kernel thread; gtop profiles user processes")


def _check_host_tier(tier: str) -> None:
    """A forced host-thread tier must be able to run here: say why not, before starting."""
    if tier in ("auto", "off"):
        return
    from gtop.collectors.threads.tiers import tier_report

    for status in tier_report(load=False):
        if status.tier == tier and not status.available:
            raise UserError(
                f"--host-tier {tier} cannot run here: it needs {status.needs} "
                "(--host-tier auto takes the best tier that works)"
            )


def start_attach(config: Config):  # -> PendingAttach | None
    """``--pid``'s attach, begun now, before the session's imports (numpy, the
    collectors: 0.1-0.5 s): the agent is queued beside them
    (:class:`~gtop.collectors.agent.attach.PendingAttach`); None when nothing is attached.

    Raises:
        UserError: an unknown agent mode or kind.
    """
    if config.pid is None or not config.agent or config.cmd:
        return None
    _check_target(config.pid)
    _check_host_tier(config.host_tier)  # refused before anything is queued
    from gtop.collectors.agent.attach import PendingAttach

    try:
        return PendingAttach(config.pid, config.agent_mode, agent_options(config))
    except ValueError as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"cannot attach to pid {config.pid}: {exc}") from None


def agent_options(config: Config) -> dict | None:
    """The agent's options that ``config`` sets (:func:`gtop.agent.runtime.start`)."""
    return {"sample_above": 0} if config.trace_every_kernel else None


def live_source(config: Config, attach_now: bool = True):  # -> LiveSource
    """The live source for ``config``: a launched command with the agent, or a pid with
    the agent attached (``attach_now`` False: the caller attaches, see
    :func:`~gtop.cli.record._attach_while_recording`)."""
    pending = start_attach(config) if attach_now else None
    try:
        return _live_source(config, pending)
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise


def _live_source(config: Config, pending):  # -> LiveSource
    from gtop.collectors.agent.attach import AttachError
    from gtop.collectors.host import TargetGone
    from gtop.session.live import LiveSource

    targeted = config.pid is not None or bool(config.cmd)
    no_gpu: tuple[type[Exception], ...] = ()  # a target's session goes on without NVML
    if config.pid is not None:
        _check_target(config.pid)
    if targeted:
        _check_host_tier(config.host_tier)
    else:
        from gtop.collectors.nvml import NvmlUnavailable

        no_gpu = (NvmlUnavailable,)
    try:
        source = LiveSource(
            config.pid,
            config.interval_s,
            require_gpu=not targeted,
            host_tier=config.host_tier,
            py_rate_hz=config.py_rate_hz,
            py_idle=config.py_idle,
            agent_options=agent_options(config),
        )
    except TargetGone as exc:
        raise UserError(str(exc)) from None
    except no_gpu as exc:
        raise UserError(
            f"no GPU to show ({exc}). Try `gtop demo` to replay a bundled recording, "
            "or `gtop --pid PID` for one process's host data."
        ) from None
    if config.cmd:
        try:
            source.launch(
                list(config.cmd), config.agent_mode, config.agent, **target_output(config)
            )
        except (AttachError, ValueError) as exc:
            source.stop()
            raise UserError(str(exc)) from None
    elif pending is not None:
        error = source.attach_agent(config.agent_mode, pending=pending)
        if error:
            print(
                f"gtop: {error}; carrying on without the agent (NVML and host data only)",
                file=sys.stderr,
            )
    return source


def target_output(config: Config) -> dict:
    """Where a launched target's output goes: a log file under the UI, else the terminal."""
    if config.command != "run":
        return {}
    from gtop.core.files import create_unique, private_folder, state_folder

    try:
        name = f"gtop-run-{time.strftime('%Y%m%d-%H%M%S')}-"
        if private_folder("."):  # made relative to the folder itself, not through its path
            log, fd = create_unique(".", name, ".log")
            log = Path.cwd() / log.name
        else:
            log, fd = create_unique(state_folder(), name, ".log")
    except OSError as exc:
        raise UserError(f"cannot create the target's log: {exc}") from None
    print(f"gtop: the target's output goes to {log}", file=sys.stderr)
    handle = os.fdopen(fd, "ab")  # the child writes it for its lifetime
    return {"stdout": handle, "stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL}


def cmd_top(config: Config) -> int:
    check_theme(config)
    if config.command == "run" and headless(config):
        raise UserError(
            "gtop run draws a live UI and needs a terminal; without one, record instead: "
            "gtop record -o FILE -- CMD ..."
        )
    if config.command == "top" and headless(config):
        settle_s = max(ONCE_SETTLE_S, 2.5 * config.interval_s)
        # one frame shows no CUPTI data: no agent goes into the target for it
        return print_frame(live_source(replace(config, agent=False)), config, settle_s)
    source = live_source(config)
    status = run_ui(source, config)
    if source.process is not None and source.process.poll() is None:
        print(
            f"gtop: pid {source.process.pid} keeps running ({' '.join(config.cmd)})",
            file=sys.stderr,
        )
    return status


def cmd_serve(config: Config) -> int:
    from gtop.headless import serve

    source = (
        replay_source(config, at_window=False) if config.file is not None else live_source(config)
    )
    try:
        return serve(filtered(source, config), config.port, config.bind)
    except OSError as exc:
        raise UserError(
            f"cannot serve on {config.bind}:{config.port}: {exc.strerror or exc}"
        ) from None
