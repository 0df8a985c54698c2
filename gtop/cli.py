"""Command line: parse into a typed :class:`Config` (pure), then dispatch.

Every failure a user can cause (bad pid, missing file, no GPU) ends in one line on
stderr starting with ``gtop:`` and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gtop import __version__

DEMO_RECORDING = "idle_busy_idle.gtop"
MIN_INTERVAL_S = 0.1
DEFAULT_INTERVAL_S = 0.5
EXIT_FAILURE = 1

DESCRIPTION = """\
gtop: a top-like live profiler for GPU programs.

  gtop                        live overview of all GPUs and their processes
  gtop --pid PID              focus one process (and attach the CUPTI agent)
  gtop run [opts] -- CMD ...  launch CMD with the in-process agent, show it live
  gtop record -o FILE [--pid PID | -- CMD ...] [--duration S]   headless recording
  gtop replay FILE            the same UI over a recording
  gtop report FILE [--json]   summary of a recording
  gtop export FILE --format {perfetto,chrome,csv} -o OUT   convert a recording
  gtop demo                   replay a bundled real recording (works without a GPU)
  gtop doctor                 what works on this machine and why not
  gtop probe list | instrument IN.ptx --probe NAME [--kernel RE] [--sample N] -o OUT.ptx
                              the PTX probe engine, offline
"""


@dataclass(frozen=True)
class Config:
    """What the user asked for, validated."""

    command: str
    pid: int | None = None
    interval_s: float = DEFAULT_INTERVAL_S
    no_color: bool = False
    output: Path | None = None
    duration_s: float | None = None
    file: Path | None = None
    json: bool = False
    overwrite: bool = False
    format: str | None = None
    cmd: tuple[str, ...] = ()
    """The command to launch with the agent (``gtop run`` / ``gtop record -- CMD``)."""
    agent_mode: str = "default"
    agent: bool = True
    host_tier: str = "auto"
    probe_args: argparse.Namespace | None = field(default=None, compare=False)
    """The parsed ``gtop probe`` arguments, handed to :mod:`gtop.probes.command`."""


_N = TypeVar("_N", int, float)


def _number(text: str, kind: Callable[[str], _N], what: str) -> _N:
    """``text`` as a ``kind``, else an argparse error naming ``what`` it should be."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None


def _interval(text: str) -> float:
    value = _number(text, float, "number")
    if value < MIN_INTERVAL_S:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_INTERVAL_S} s")
    return value


def _positive(text: str) -> float:
    value = _number(text, float, "number")
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _pid(text: str) -> int:
    value = _number(text, int, "pid")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a pid: {text!r}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="S",
        help=f"sampling period in seconds (default 0.5, at least {MIN_INTERVAL_S})",
    )
    parser.add_argument(
        "--no-color", action="store_true", help="no colours (also when NO_COLOR is set)"
    )


def _target_options(parser: argparse.ArgumentParser) -> None:
    """Options for commands that profile a target process (--pid, run, record)."""
    parser.add_argument(
        "--agent-mode",
        default="default",
        metavar="MODE",
        help="what CUPTI traces in the target: default (kernels, copies, memsets, "
        "synchronisation), full (also runtime/driver API calls, NVTX, CUPTI overhead), or a "
        "comma list of kinds",
    )
    parser.add_argument(
        "--no-agent",
        action="store_true",
        help="do not load the in-process agent into a --pid target (NVML and host data only)",
    )
    parser.add_argument(
        "--host-tier",
        default="auto",
        choices=["auto", "bpf", "perf", "proc", "off"],
        help="how the target's threads are traced: auto picks the best that works (bpf, "
        "then perf events, then /proc sampling); off for none",
    )


def _export_formats() -> list[str]:
    from gtop.recordings.exporters import EXPORTERS

    return list(EXPORTERS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gtop", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"gtop {__version__}")
    parser.add_argument("--pid", type=_pid, help="focus this process (and its children)")
    _common(parser)
    _target_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    record = sub.add_parser(
        "record",
        help="record headless to a .gtop file",
        usage="gtop record -o FILE [options] [--pid PID | -- CMD ...]",
        description="Record to FILE: all GPUs, one process (--pid), or a command launched "
        "with the in-process agent (-- CMD ...; recording ends when it exits).",
    )
    record.add_argument("-o", "--output", type=Path, required=True, metavar="FILE")
    record.add_argument("--pid", type=_pid, help="focus this process (and its children)")
    record.add_argument(
        "--duration",
        type=_positive,
        metavar="S",
        help="stop after S seconds (default: until Ctrl-C or SIGTERM); a launched CMD "
        "runs on, untraced",
    )
    record.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    _common(record)
    _target_options(record)
    record.add_argument(
        "cmd",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ...",
        help="launch CMD with the agent and record until it exits",
    )

    run = sub.add_parser(
        "run",
        help="launch CMD with the in-process agent and show it live",
        usage="gtop run [options] -- CMD ...",
    )
    _common(run)
    _target_options(run)

    replay = sub.add_parser("replay", help="replay a recording in the UI")
    replay.add_argument("file", type=Path, metavar="FILE")
    replay.add_argument("--no-color", action="store_true", help="no colours")

    report = sub.add_parser("report", help="summarise a recording")
    report.add_argument("file", type=Path, metavar="FILE")
    report.add_argument("--json", action="store_true", help="JSON instead of text")

    export = sub.add_parser("export", help="convert a recording for other tools")
    export.add_argument("file", type=Path, metavar="FILE")
    export.add_argument(
        "--format",
        required=True,
        choices=_export_formats(),
        help="perfetto (TrackEvent protobuf), chrome (trace-event JSON), "
        "csv (a directory of one CSV per stream)",
    )
    export.add_argument("-o", "--output", type=Path, required=True, metavar="OUT")

    demo = sub.add_parser("demo", help="replay a bundled real recording (no GPU needed)")
    demo.add_argument("--no-color", action="store_true", help="no colours")

    sub.add_parser("doctor", help="what works on this machine, and why not")

    from gtop.probes import command as probe_cli

    probe_cli.add_arguments(sub.add_parser("probe", help="the PTX probe engine, offline"))
    return parser


def parse_args(argv: list[str]) -> Config:
    """Parse ``argv`` (without the program name) into a Config.

    Raises:
        SystemExit: usage errors (argparse prints the message).
    """
    parser = build_parser()
    cmd: tuple[str, ...] = ()
    if "--" in argv:  # everything after the first -- is the command to launch
        split = argv.index("--")
        argv, cmd = argv[:split], tuple(argv[split + 1 :])
    args = parser.parse_args(argv)
    command = args.command or "top"
    if cmd and command not in ("run", "record"):
        parser.error("-- CMD goes with `gtop run` or `gtop record`")
    if command == "run" and not cmd:
        parser.error("run: give the command to launch after --, e.g. gtop run -- python train.py")
    if command == "record" and cmd and args.pid:
        parser.error("record: give either --pid PID or -- CMD, not both")
    no_color = bool(getattr(args, "no_color", False)) or "NO_COLOR" in os.environ
    return Config(
        command=command,
        pid=getattr(args, "pid", None),
        interval_s=getattr(args, "interval", DEFAULT_INTERVAL_S),
        no_color=no_color,
        output=getattr(args, "output", None),
        duration_s=getattr(args, "duration", None),
        file=getattr(args, "file", None),
        json=getattr(args, "json", False),
        overwrite=getattr(args, "force", False),
        format=getattr(args, "format", None),
        probe_args=args if command == "probe" else None,
        cmd=cmd,
        agent_mode=getattr(args, "agent_mode", "default"),
        agent=not getattr(args, "no_agent", False),
        host_tier=getattr(args, "host_tier", "auto"),
    )


class UserError(Exception):
    """A failure to report as one line (no traceback)."""


def _live_source(config: Config):  # -> LiveSource
    from gtop.collectors.agent.attach import AttachError
    from gtop.collectors.host import TargetGone
    from gtop.collectors.nvml import NvmlUnavailable
    from gtop.session.live import LiveSource

    targeted = config.pid is not None or bool(config.cmd)
    try:
        source = LiveSource(
            config.pid, config.interval_s, require_gpu=not targeted, host_tier=config.host_tier
        )
    except TargetGone as exc:
        raise UserError(str(exc)) from None
    except NvmlUnavailable as exc:
        raise UserError(
            f"no GPU to show ({exc}). Try `gtop demo` to replay a bundled recording, "
            "or `gtop --pid PID` for one process's host data."
        ) from None
    if config.cmd:
        try:
            source.launch(list(config.cmd), config.agent_mode, **_target_output(config))
        except (AttachError, ValueError) as exc:
            source.stop()
            raise UserError(str(exc)) from None
    elif config.pid is not None and config.agent:
        try:
            error = source.attach_agent(config.agent_mode)
        except ValueError as exc:
            source.stop()
            raise UserError(str(exc)) from None
        if error:
            print(
                f"gtop: {error}; carrying on without the agent (NVML and host data only)",
                file=sys.stderr,
            )
    return source


def _target_output(config: Config) -> dict:
    """Where a launched target's output goes: a log file under the UI, else the terminal."""
    if config.command != "run":
        return {}
    log = Path(f"gtop-run-{time.strftime('%Y%m%d-%H%M%S')}.log")
    print(f"gtop: the target's output goes to {log}", file=sys.stderr)
    handle = open(log, "ab")  # noqa: SIM115 - the child owns it for its lifetime
    return {"stdout": handle, "stderr": subprocess.STDOUT, "stdin": subprocess.DEVNULL}


def _open_recording(path: Path):  # -> Recording
    from gtop.recordings.reader import Recording, RecordingError

    try:
        return Recording(path)
    except RecordingError as exc:
        raise UserError(str(exc)) from None


def _run_ui(source, config: Config) -> int:
    from gtop.views.app import run_app

    start_pid = config.pid if config.pid is not None else getattr(source, "pid", None)
    return run_app(
        source, no_color=config.no_color, start_pid=start_pid, refresh_s=min(0.5, config.interval_s)
    )


def cmd_top(config: Config) -> int:
    source = _live_source(config)
    status = _run_ui(source, config)
    if source.process is not None and source.process.poll() is None:
        print(
            f"gtop: pid {source.process.pid} keeps running ({' '.join(config.cmd)})",
            file=sys.stderr,
        )
    return status


def cmd_replay(config: Config) -> int:
    from gtop.session.replay import ReplaySource

    assert config.file is not None
    return _run_ui(ReplaySource(_open_recording(config.file)), config)


def demo_recording() -> Path:
    """The bundled recording `gtop demo` plays.

    Raises:
        UserError: it is not there (an install without the repository's recordings/).
    """
    override = os.environ.get("GTOP_DEMO")
    candidates = [Path(override)] if override else []
    root = Path(__file__).resolve().parent.parent / "recordings"
    candidates += [root / DEMO_RECORDING]
    for path in candidates:
        if path.is_file():
            return path
    raise UserError(f"no bundled recording at {candidates[-1]}; set GTOP_DEMO=FILE.gtop")


def cmd_demo(config: Config) -> int:
    from dataclasses import replace

    return cmd_replay(replace(config, file=demo_recording()))


def cmd_record(config: Config) -> int:
    assert config.output is not None
    if config.output.exists() and not config.overwrite:
        raise UserError(f"{config.output} exists (use --force to overwrite)")
    source = _live_source(config)
    try:
        recorder = source.start_recording(config.output, overwrite=config.overwrite)
    except FileExistsError:
        raise UserError(f"{config.output} exists (use --force to overwrite)") from None
    except OSError as exc:
        raise UserError(f"cannot create {config.output}: {exc.strerror or exc}") from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    source.start()
    started = time.monotonic()
    interactive = sys.stderr.isatty()
    try:
        while not stop.wait(1.0):
            elapsed = time.monotonic() - started
            if interactive:
                drops = sum(source.drops().values())
                print(
                    f"\rgtop: recording {config.output}: {elapsed:5.0f} s, "
                    f"{recorder.rows()} rows, {drops} dropped",
                    end="",
                    file=sys.stderr,
                )
            if recorder.error:
                break
            if config.duration_s is not None and elapsed >= config.duration_s:
                break
            if not source.target_alive():
                print("\ngtop: the target exited; recording finalised", file=sys.stderr)
                break
    finally:
        source.stop()
    if interactive:
        print(file=sys.stderr)
    if config.cmd and source.target_alive():
        # the agent has detached: the launched command runs on at full speed
        print(f"gtop: {config.cmd[0]} (pid {source.pid}) runs on untraced", file=sys.stderr)
    if recorder.error:
        raise UserError(recorder.error)
    print(f"gtop: wrote {config.output} ({recorder.rows()} rows)", file=sys.stderr)
    return 0


def cmd_report(config: Config) -> int:
    from gtop.analysis.report import build_report
    from gtop.analysis.report_text import format_report
    from gtop.recordings.report_data import read_report_data

    assert config.file is not None
    with _open_recording(config.file) as rec:
        data, kernels = read_report_data(rec)
        report = build_report(
            rec.meta, data, rec.entities(), rec.problems, rec.time_range(), kernels
        )
    if config.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_report(report))
    return 0


def cmd_export(config: Config) -> int:
    from gtop.recordings.exporters import EXPORTERS

    assert config.file is not None and config.output is not None and config.format
    with _open_recording(config.file) as rec:
        try:
            summary = EXPORTERS[config.format].export(rec, config.output)
        except OSError as exc:
            raise UserError(f"cannot write {config.output}: {exc.strerror or exc}") from None
        damage = rec.damage()
        if damage:
            print(f"gtop: warning: {damage}", file=sys.stderr)
    print(f"gtop: {summary}", file=sys.stderr)
    return 0


def cmd_probe(config: Config) -> int:
    from gtop.probes import command as probe_cli

    assert config.probe_args is not None
    return probe_cli.run(config.probe_args)


def cmd_doctor(config: Config) -> int:
    from gtop.doctor import format_checks, run_checks

    print(format_checks(run_checks()))
    return 0


COMMANDS = {
    "top": cmd_top,
    "run": cmd_top,
    "record": cmd_record,
    "replay": cmd_replay,
    "report": cmd_report,
    "export": cmd_export,
    "demo": cmd_demo,
    "doctor": cmd_doctor,
    "probe": cmd_probe,
}


def main(argv: list[str] | None = None) -> int:
    config = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return COMMANDS[config.command](config)
    except UserError as exc:
        print(f"gtop: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
