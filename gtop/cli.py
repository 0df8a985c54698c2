"""Command line: parse into a typed :class:`Config` (pure), then dispatch.

Every failure a user can cause (bad pid, missing file, no GPU) ends in one line on
stderr starting with ``gtop:`` and a non-zero exit status, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from gtop import __version__
from gtop.core.pyframe import DEFAULT_RATE_HZ as DEFAULT_PY_RATE_HZ
from gtop.core.pyframe import MAX_RATE_HZ as MAX_PY_RATE_HZ
from gtop.core.stdout import EXIT_PIPE_CLOSED, OutputClosed, OutputFailed, emit, silence
from gtop.probes.options import add_arguments as add_probe_arguments
from gtop.recordings.options import add_export_arguments, add_window_options

if TYPE_CHECKING:
    from gtop.session.probe_requests import ProbeRequest

DEMO_RECORDING = "loader-1-worker.gtop"
MIN_INTERVAL_S = 0.1
MAX_INTERVAL_S = 600.0
"""Longest sampling period: a recording's readers take a gap of an hour for damage."""
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095
MAX_RECORDING_PATH_BYTES = 500
"""SQLite refuses databases whose absolute path (plus ``-journal``) passes 512 bytes."""
MAX_SECONDS = 2**62 / 1e9
"""Longest time an option takes (~146 years): any such time in ns fits in int64."""
MAX_GPU_INDEX = 4095
MAX_PID = 2**31 - 1
"""A pid is a C int (Linux's own limit is 2**22; a bigger number names no process)."""
PF_KTHREAD = 0x00200000
"""``/proc/PID/stat`` flags: a kernel thread."""
DEFAULT_INTERVAL_S = 0.5
EXIT_FAILURE = 1
ONCE_SETTLE_S = 1.0
"""``--once`` live: how long collectors run before the frame (at least two samples)."""
FOREIGN_SUFFIXES = (
    *(".perfetto-trace", ".pftrace", ".json", ".json.gz", ".pb.gz", ".folded", ".csv"),
    *(".svg", ".html", ".txt", ".nsys-rep", ".qdrep"),
)
"""Names ``gtop record -o`` refuses: formats of other tools (``gtop export`` writes some)."""
SERVE_PORT = 9401
"""``gtop serve``'s default port (dcgm-exporter's is 9400, so both can run)."""

DESCRIPTION = """\
gtop: a top-like live profiler for GPU programs.

  gtop                        live overview of all GPUs and their processes
  gtop --once [--json]        print one frame of the overview and exit
  gtop --pid PID              focus one process (and attach the CUPTI agent)
  gtop run [opts] -- CMD ...  launch CMD with the in-process agent, show it live
  gtop record -o FILE [--pid PID | -- CMD ...] [--duration S]   headless recording
  gtop replay FILE            the same UI over a recording
  gtop report FILE [--json]   summary of a recording
  gtop report A B [--json]    two recordings side by side (e.g. before and after a fix)
  gtop export FILE [--format F] -o OUT   convert a recording (perfetto, chrome, kineto,
                              speedscope, folded, pprof, csv; F from OUT's name)
  gtop merge A.gtop B.gtop ... -o JOB.gtop   several hosts' recordings as one job
  gtop demo                   replay a bundled real recording (works without a GPU)
  gtop doctor                 what works on this machine and why not
  gtop serve [--port N] [--pid PID | --replay FILE]   Prometheus/OpenMetrics endpoint
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
    files: tuple[Path, ...] = ()
    """``gtop merge``: the recordings to merge; ``gtop report``: the one to summarise, or
    the two to compare."""
    json: bool = False
    overwrite: bool = False
    cmd: tuple[str, ...] = ()
    """The command to launch with the agent (``gtop run`` / ``gtop record -- CMD``)."""
    agent_mode: str = "default"
    agent: bool = True
    trace_every_kernel: bool = False
    """Never sample kernels (``--trace-every-kernel``; :mod:`gtop.agent.sampling`)."""
    host_tier: str = "auto"
    py_rate_hz: float = DEFAULT_PY_RATE_HZ
    """Python stack samples per second per thread (``--rate``)."""
    py_idle: bool = True
    """``--idle`` (default) or ``--no-idle``."""
    window: tuple[str | None, str | None] = (None, None)
    """``report``/``export``: ``--from``/``--to`` (seconds from the start, or ``steady``)."""
    probe_args: argparse.Namespace | None = field(default=None, compare=False)
    """The parsed ``gtop probe`` arguments, handed to :mod:`gtop.probes.command`."""
    export_args: argparse.Namespace | None = field(default=None, compare=False)
    """The parsed ``gtop export`` arguments (:mod:`gtop.recordings.exporters.command`)."""
    once: bool = False
    """Print one frame of the overview (text, or JSON with ``json``) instead of the UI."""
    at_s: float | None = None
    """Replay: where the frame or the endpoint starts, in seconds from the start."""
    gpus: frozenset[int] | None = None
    """Only these GPU indices (``--gpus``), else all."""
    theme: str | None = None
    port: int = SERVE_PORT
    bind: str = "127.0.0.1"
    compare: Path | None = None
    """``replay --compare``: a second recording to compare with."""
    probes: tuple[ProbeRequest, ...] = ()
    """``record --probe``: probes to turn on once the target's agent is in."""
    what_if: tuple[Any, ...] = ()
    """``report --what-if``: changes to predict
    (:class:`gtop.analysis.diagnosis.what_if.Change`)."""


_N = TypeVar("_N", int, float)


def _number(text: str, kind: Callable[[str], _N], what: str) -> _N:
    """``text`` as a ``kind``, else an argparse error naming ``what`` it should be."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what}: {text!r}") from None


def _in_range(value: _N, low: float, high: float, text: str) -> _N:
    """``value`` if it lies in ``[low, high]`` (a NaN never does), else an argparse error."""
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{text!r} is not between {low:g} and {high:g}")
    return value


WHAT_IF_HELP = (
    "CAUSE=F (H:CTRL, H:APP, H:IO, OFF_CPU, UNKNOWN: that host time times F), "
    "kernel:GLOB=F (kernels named GLOB take F of their time), sync=0, loader (the "
    "DataLoader keeps up), graphs[=GAP_NS], offload[=F] (H:APP moved to the GPU at F "
    "of its host time)"
)
"""The changes :func:`gtop.analysis.diagnosis.what_if.parse_change` takes (its ``HELP``; here so
that building the parser imports no numpy)."""


def _what_if(text: str) -> Any:
    """A ``--what-if`` change (:func:`gtop.analysis.diagnosis.what_if.parse_change`)."""
    from gtop.analysis.diagnosis.what_if import ChangeError, parse_change

    try:
        return parse_change(text)
    except ChangeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds_option(low: float = 0.0, high: float = MAX_SECONDS) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds in ``[low, high]`` (reusable by any
    option that takes seconds or a period)."""

    def parse(text: str) -> float:
        return _in_range(_number(text, float, "number"), low, high, text)

    return parse


def _probe_request(text: str) -> ProbeRequest:
    from gtop.session.probe_requests import parse

    return parse(text)


def _positive(text: str) -> float:
    value = seconds_option()(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


_interval = seconds_option(MIN_INTERVAL_S, MAX_INTERVAL_S)
_non_negative = seconds_option()


def rate_option(low_hz: float, high_hz: float) -> Callable[[str], float]:
    """An argparse type: a rate in Hz, finite and in ``[low_hz, high_hz]``, given back as
    its period in seconds (reusable by any ``--rate``)."""

    def parse(text: str) -> float:
        return 1 / _in_range(_number(text, float, "number"), low_hz, high_hz, text)

    return parse


def _path(text: str) -> Path:
    """A path the file system can take: no name over 255 bytes, 4095 in all."""
    raw = os.fsencode(text)
    if not raw:
        raise argparse.ArgumentTypeError("empty path")
    if len(raw) > MAX_PATH_BYTES or any(len(part) > MAX_NAME_BYTES for part in raw.split(b"/")):
        raise argparse.ArgumentTypeError(
            f"path too long (at most {MAX_NAME_BYTES} bytes a name, {MAX_PATH_BYTES} in all)"
        )
    return Path(text)


def _recording_path(text: str) -> Path:
    """A recording's path: SQLite also opens it by its absolute name, up to 500 bytes."""
    path = _path(text)
    if len(os.fsencode(os.path.abspath(path))) > MAX_RECORDING_PATH_BYTES:
        raise argparse.ArgumentTypeError(
            f"path too long for a recording (SQLite takes {MAX_RECORDING_PATH_BYTES} bytes "
            "as an absolute path)"
        )
    return path


def _gpus(text: str) -> frozenset[int]:
    try:
        found = frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        found = frozenset({-1})
    if not found or min(found) < 0 or max(found) > MAX_GPU_INDEX:
        raise argparse.ArgumentTypeError(f"not a list of GPU indices: {text!r} (e.g. 0,1)")
    return found


def _port(text: str) -> int:
    value = _number(text, int, "port")
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return value


def _pid(text: str) -> int:
    value = _number(text, int, "pid")
    if not 0 < value <= MAX_PID:
        raise argparse.ArgumentTypeError(f"not a pid: {text!r}")
    return value


_py_rate = rate_option(1, MAX_PY_RATE_HZ)


def _common(parser: argparse.ArgumentParser, color: bool = True) -> None:
    """The sampling period (``--interval``), the Python stack sampling (``--rate``,
    ``--idle``), ``--gpus``, and ``--no-color`` where something is drawn (``color``)."""
    parser.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL_S,
        metavar="S",
        help=f"NVML and UI sampling period in seconds (default 0.5; {MIN_INTERVAL_S} to "
        f"{MAX_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--rate",
        type=_py_rate,
        dest="py_period",
        default=1 / DEFAULT_PY_RATE_HZ,
        metavar="HZ",
        help=f"Python stack samples per second per thread, as py-spy's --rate (default "
        f"{DEFAULT_PY_RATE_HZ:g}; 1 to {MAX_PY_RATE_HZ:g}); the NVML and UI period is --interval",
    )
    idle = parser.add_mutually_exclusive_group()
    idle.add_argument(
        "--idle",
        action="store_true",
        default=True,
        help="keep Python samples of threads that are not running, so waits show the line "
        "they wait at (the default)",
    )
    idle.add_argument(
        "--no-idle",
        action="store_false",
        dest="idle",
        help="drop Python samples of threads that are not running, as py-spy without --idle",
    )
    if color:
        parser.add_argument(
            "--no-color", action="store_true", help="no colours (also when NO_COLOR is set)"
        )
    _gpu_option(parser)


def _gpu_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpus",
        type=_gpus,
        metavar="LIST",
        help="only these GPUs, by NVML index, e.g. 0,1 (their samples, processes, kernels "
        "and copies; host data is kept)",
    )


def _ui_options(parser: argparse.ArgumentParser, replay: bool) -> None:
    """Options of the commands that draw the UI: a theme, or one frame printed instead."""
    parser.add_argument(
        "--theme",
        metavar="NAME",
        help="colour theme from Textual's set: textual-dark (default), textual-light, nord, "
        "gruvbox, dracula, tokyo-night, monokai, solarized-light, ... (a wrong name lists all)",
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="print one frame of the overview and exit (also what happens when stdout is "
        "not a terminal)"
        + (
            ": the frame at --at, default the end of the window gtop report covers, with "
            "the target's verdict over that window"
            if replay
            else ""
        ),
    )
    parser.add_argument("--json", action="store_true", help="one frame as JSON (implies --once)")
    if replay:
        _at_option(parser)


def _at_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--at",
        type=_non_negative,
        metavar="S",
        help="start at S seconds into the recording (default: paused at the end of the "
        "window gtop report covers, the steady state of the GPU work; w goes there)",
    )


def _target_options(parser: argparse.ArgumentParser) -> None:
    """Options for commands that profile a target process (--pid, run, record)."""
    parser.add_argument(
        "--agent-mode",
        default="default",
        metavar="MODE",
        help="what CUPTI traces in the target: default (kernels, copies, memsets, "
        "synchronisation; a CUDA graph launch as one record), graph-nodes (the same with "
        "every node of every graph launch; key g in the Kernels tab switches live), full "
        "(graph nodes, runtime/driver API calls, NVTX, CUPTI overhead), or a comma list of "
        "kinds (graph,kernel,memcpy,memset,sync,runtime,driver,marker,overhead)",
    )
    parser.add_argument(
        "--trace-every-kernel",
        action="store_true",
        help="trace every kernel launch even above 20,000 kernels/s (by default gtop then "
        "traces in a duty cycle to keep its cost near 2%%; see README)",
    )
    parser.add_argument(
        "--no-agent",
        action="store_true",
        help="do not load the in-process agent into the target (--pid or a launched "
        "command): NVML and host data only",
    )
    parser.add_argument(
        "--host-tier",
        default="auto",
        choices=["auto", "bpf", "perf", "proc", "off"],
        help="how the target's threads are traced: auto picks the best that works (bpf, "
        "then perf events, then /proc sampling); off for none",
    )


PID_HELP = (
    "focus this process; its descendants (DataLoader workers, subprocesses) are always "
    "followed, as py-spy's --subprocesses does"
)


class _Version(argparse.Action):
    """``--version``: print versions (probing the driver libraries only now) and exit."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        from gtop.doctor import versions

        _emit_or_exit("\n".join([f"gtop {__version__}", *versions()]))
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gtop", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="gtop's version, and the NVIDIA driver, CUDA driver API and CUPTI found here",
    )
    parser.add_argument("--pid", type=_pid, help=PID_HELP)
    _common(parser)
    _target_options(parser)
    _ui_options(parser, replay=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    record = sub.add_parser(
        "record",
        help="record headless to a .gtop file",
        usage="gtop record -o FILE [options] [--pid PID | -- CMD ...]",
        description="Record to FILE: all GPUs, one process (--pid), or a command launched "
        "with the in-process agent (-- CMD ...; recording ends when it exits).",
    )
    record.add_argument("-o", "--output", type=_recording_path, required=True, metavar="FILE")
    record.add_argument("--pid", type=_pid, help=PID_HELP)
    record.add_argument(
        "--duration",
        type=_positive,
        metavar="S",
        help="stop after S seconds (default: until Ctrl-C or SIGTERM); a launched CMD "
        "runs on, untraced",
    )
    record.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    record.add_argument(
        "--probe",
        action="append",
        type=_probe_request,
        default=[],
        metavar="PROBE:KERNEL[:EVERY]",
        help="turn a PTX probe (block_sched, tensorop, mem_trace) on for the Triton kernel "
        "named KERNEL once the agent is in (as the Kernels tab's keys do): 1 launch in N, "
        "N chosen to keep the probe's cost within 5%% of the target's time, or 1 in EVERY "
        "(1: every launch); repeatable; needs --pid or -- CMD",
    )
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
        description="Launch CMD with the in-process agent and show it live. CMD's output "
        "goes to a new log, gtop-run-DATE-TIME-RANDOM.log (mode 0600), in the current "
        "folder when only you can write there, else in $XDG_STATE_HOME/gtop "
        "(~/.local/state/gtop); gtop prints its path.",
    )
    _common(run)
    _target_options(run)
    _ui_options(run, replay=False)

    replay = sub.add_parser("replay", help="replay a recording in the UI")
    replay.add_argument("file", type=_recording_path, metavar="FILE")
    replay.add_argument("--no-color", action="store_true", help="no colours")
    replay.add_argument(
        "--compare",
        type=_recording_path,
        metavar="FILE",
        help="compare with another recording: both breakdowns side by side (c toggles)",
    )
    _gpu_option(replay)
    _ui_options(replay, replay=True)

    report = sub.add_parser(
        "report",
        help="summarise a recording, or compare two",
        usage="gtop report [--json] [--from S] [--to S] FILE [B]",
        description="Summarise FILE: the verdict (why the GPU is idle), the on-/off-GPU "
        "breakdown, top kernels, API calls, threads, drops. Given a second recording B: "
        "both side by side (GAR, each cause, verdicts, top kernels) with the differences "
        "B - FILE, over the same kind of window in each; --from/--to apply to both.",
    )
    report.add_argument(
        "files",
        type=_recording_path,
        nargs="+",
        metavar="FILE",
        help="a recording; a second one to compare it with (e.g. before and after a fix)",
    )
    report.add_argument(
        "--json",
        action="store_true",
        help="JSON instead of text (docs/report.schema.json; comparing two: "
        "docs/compare.schema.json)",
    )
    add_window_options(report, "the steady state of the target's GPU work")
    report.add_argument(
        "--what-if",
        action="append",
        type=_what_if,
        metavar="CHANGE",
        help="also predict what CHANGE buys, replaying the window with it (repeatable): "
        + WHAT_IF_HELP,
    )
    add_export_arguments(
        sub.add_parser(
            "export",
            help="convert a recording for other tools",
            usage="gtop export FILE [--format FORMAT] -o OUT [--gzip] [--from S] [--to S]",
        )
    )

    merge = sub.add_parser(
        "merge",
        help="merge recordings of one job (one per host) into one, on one clock",
        description="Merge recordings of one job into one: clocks aligned by each "
        "recording's CLOCK_REALTIME-CLOCK_MONOTONIC offset, refined by the ends of the "
        "ranks' collectives (recordings of one boot share their clock exactly).",
    )
    merge.add_argument("files", type=_recording_path, nargs="+", metavar="FILE")
    merge.add_argument("-o", "--output", type=_recording_path, required=True, metavar="OUT")
    merge.add_argument("--force", action="store_true", help="overwrite OUT if it exists")

    demo = sub.add_parser("demo", help="replay a bundled real recording (no GPU needed)")
    demo.add_argument("--no-color", action="store_true", help="no colours")
    _gpu_option(demo)
    _ui_options(demo, replay=True)

    sub.add_parser("doctor", help="what works on this machine, and why not")

    serve = sub.add_parser(
        "serve",
        help="serve Prometheus/OpenMetrics metrics over HTTP",
        description="Serve /metrics: dcgm-exporter's GPU gauges (DCGM_FI_DEV_GPU_UTIL, "
        "DCGM_FI_DEV_FB_USED, ...) plus what only gtop knows: per-process GPU Active Ratio "
        "and off-GPU seconds by cause (needs the agent: --pid), kernels per second, drops. "
        "Runs until Ctrl-C or SIGTERM.",
    )
    serve.add_argument(
        "--port", type=_port, default=SERVE_PORT, help=f"TCP port (default {SERVE_PORT})"
    )
    serve.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDR",
        help="address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    serve.add_argument("--pid", type=_pid, help=PID_HELP)
    serve.add_argument(
        "--replay",
        type=_recording_path,
        metavar="FILE",
        dest="file",
        help="serve a recording played back in real time instead of this machine",
    )
    _at_option(serve)
    _common(serve, color=False)
    _target_options(serve)

    add_probe_arguments(sub.add_parser("probe", help="the PTX probe engine, offline"))
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
        if not cmd or not cmd[0]:
            parser.exit(2, "gtop: give the command to launch after --, e.g. -- python train.py\n")
    args = parser.parse_args(argv)
    command = args.command or "top"
    if cmd and command not in ("run", "record"):
        parser.error("-- CMD goes with `gtop run` or `gtop record`")
    if command == "run" and not cmd:
        parser.error("run: give the command to launch after --, e.g. gtop run -- python train.py")
    if command == "record" and cmd and args.pid:
        parser.error("record: give either --pid PID or -- CMD, not both")
    if command == "record" and args.probe and (args.no_agent or not (cmd or args.pid)):
        parser.error("record: --probe needs the agent in a process: --pid PID or -- CMD")
    if command == "merge" and len(args.files) < 2:
        parser.error("merge: give two recordings or more")
    if command == "serve" and args.pid and args.file:
        parser.error("serve: give either --pid PID or --replay FILE, not both")
    no_color = bool(getattr(args, "no_color", False)) or "NO_COLOR" in os.environ
    return Config(
        command=command,
        pid=getattr(args, "pid", None),
        interval_s=getattr(args, "interval", DEFAULT_INTERVAL_S),
        no_color=no_color,
        output=getattr(args, "output", None),
        duration_s=getattr(args, "duration", None),
        file=getattr(args, "file", None) or (args.files[0] if command == "report" else None),
        files=tuple(getattr(args, "files", None) or ()),
        json=getattr(args, "json", False),
        overwrite=getattr(args, "force", False),
        probe_args=args if command == "probe" else None,
        export_args=args if command == "export" else None,
        cmd=cmd,
        agent_mode=getattr(args, "agent_mode", "default"),
        agent=not getattr(args, "no_agent", False),
        trace_every_kernel=getattr(args, "trace_every_kernel", False),
        host_tier=getattr(args, "host_tier", "auto"),
        py_rate_hz=round(1 / getattr(args, "py_period", 1 / DEFAULT_PY_RATE_HZ), 6),
        py_idle=getattr(args, "idle", True),
        window=(getattr(args, "from_s", None), getattr(args, "to_s", None)),
        once=getattr(args, "once", False) or (command != "report" and getattr(args, "json", False)),
        at_s=getattr(args, "at", None),
        gpus=getattr(args, "gpus", None),
        theme=getattr(args, "theme", None),
        port=getattr(args, "port", SERVE_PORT),
        bind=getattr(args, "bind", "127.0.0.1"),
        compare=getattr(args, "compare", None),
        probes=tuple(getattr(args, "probe", None) or ()),
        what_if=tuple(getattr(args, "what_if", None) or ()),
    )


class UserError(Exception):
    """A failure to report as one line (no traceback)."""


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


def _check_forced_tier_started(source, config: Config) -> None:
    """A forced host-thread tier that passed :func:`_check_host_tier` but failed to
    start (the BPF object refused by the kernel, say) ends the recording with one line."""
    if config.host_tier in ("auto", "off"):
        return
    source.wait_started()
    for status in source.statuses():
        if status.name == "threads" and not status.ok:
            source.stop()
            raise UserError(f"--host-tier {config.host_tier}: {status.detail}")


def _check_output(path: Path, overwrite: bool) -> None:
    """Before attaching to anything: ``path`` can be created (or, with ``--force``,
    replaced: only a regular file is)."""
    folder = path.parent
    if not folder.is_dir():
        raise UserError(f"cannot create {path}: no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"cannot create {path}: {folder} is not writable")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path} exists and is not a regular file; choose another path")
    if not overwrite:
        raise UserError(f"{path} exists (use --force to overwrite)")


def _live_source(config: Config, attach_now: bool = True):  # -> LiveSource
    """The live source for ``config``: a launched command with the agent, or a pid with
    the agent attached (``attach_now`` False: the caller attaches, see
    :func:`_attach_while_recording`)."""
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
            agent_options={"sample_above": 0} if config.trace_every_kernel else None,
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
                list(config.cmd), config.agent_mode, config.agent, **_target_output(config)
            )
        except (AttachError, ValueError) as exc:
            source.stop()
            raise UserError(str(exc)) from None
    elif config.pid is not None and config.agent and attach_now:
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


def _open_recording(path: Path):  # -> Recording
    from gtop.recordings.reader import Recording, RecordingError

    try:
        return Recording(path)
    except RecordingError as exc:
        raise UserError(str(exc)) from None


def _headless(config: Config) -> bool:
    """Print one frame instead of the UI: asked for, or stdout is not a terminal."""
    return config.once or not sys.stdout.isatty()


def _print_frame(source, config: Config, settle_s: float) -> int:
    from gtop.headless import print_once

    if not config.once:
        print("gtop: stdout is not a terminal: one frame as text (as --once)", file=sys.stderr)
    return print_once(_filtered(source, config), settle_s, config.json, config.gpus)


def _filtered(source, config: Config):  # -> Source
    if config.gpus is None:
        return source
    from gtop.session.gpu_subset import GpuSubset

    return GpuSubset(source, config.gpus)


def _check_theme(config: Config) -> None:
    if config.theme is None:
        return
    from gtop.views.app import theme_names

    if config.theme not in theme_names():
        raise UserError(f"no theme {config.theme!r}; one of: {', '.join(theme_names())}")


def _run_ui(source, config: Config) -> int:
    from gtop.views.app import run_app

    start_pid = config.pid if config.pid is not None else getattr(source, "pid", None)
    return run_app(
        _filtered(source, config),
        theme=config.theme,
        no_color=config.no_color,
        start_pid=start_pid,
        refresh_s=min(0.5, config.interval_s),
        compare=config.compare,
    )


def cmd_top(config: Config) -> int:
    _check_theme(config)
    if config.command == "run" and _headless(config):
        raise UserError(
            "gtop run draws a live UI and needs a terminal; without one, record instead: "
            "gtop record -o FILE -- CMD ..."
        )
    if config.command == "top" and _headless(config):
        settle_s = max(ONCE_SETTLE_S, 2.5 * config.interval_s)
        # one frame shows no CUPTI data: no agent goes into the target for it
        return _print_frame(_live_source(replace(config, agent=False)), config, settle_s)
    source = _live_source(config)
    status = _run_ui(source, config)
    if source.process is not None and source.process.poll() is None:
        print(
            f"gtop: pid {source.process.pid} keeps running ({' '.join(config.cmd)})",
            file=sys.stderr,
        )
    return status


def _replay_source(config: Config, at_window: bool = True):  # -> ReplaySource
    """The recording ``config.file`` played from ``--at`` (on the overview); by default
    paused at the end of the window ``gtop report`` covers (the steady state of its GPU
    work) on the target's process screen, where the views cover that window
    (``at_window`` false: played from its start)."""
    from gtop.session.replay import ReplaySource

    assert config.file is not None
    source = ReplaySource(_open_recording(config.file))
    if config.at_s is not None:
        source.seek(source.t_start + int(config.at_s * 1e9))
    elif at_window:
        source.open_at_answer()
    return source


def cmd_replay(config: Config) -> int:
    _check_theme(config)
    if config.compare is not None:
        with _open_recording(config.compare):
            pass  # a missing or damaged file says so in one line now, not in the UI
    if _headless(config):
        return _print_frame(_replay_source(replace(config, once=True)), config, 0.0)
    return _run_ui(_replay_source(config), config)


def cmd_serve(config: Config) -> int:
    from gtop.headless import serve

    source = (
        _replay_source(config, at_window=False) if config.file is not None else _live_source(config)
    )
    try:
        return serve(_filtered(source, config), config.port, config.bind)
    except OSError as exc:
        raise UserError(
            f"cannot serve on {config.bind}:{config.port}: {exc.strerror or exc}"
        ) from None


def demo_recording() -> Path:
    """The recording `gtop demo` plays: ``GTOP_DEMO`` if set, else the one packaged in
    ``gtop/demo/`` (``recordings/`` links to it in the repository).

    Raises:
        UserError: it is not there.
    """
    override = os.environ.get("GTOP_DEMO")
    path = Path(override) if override else Path(__file__).resolve().parent / "demo" / DEMO_RECORDING
    if not path.is_file():
        raise UserError(f"no recording at {path}; set GTOP_DEMO=FILE.gtop")
    return path


def cmd_demo(config: Config) -> int:
    return cmd_replay(replace(config, file=demo_recording()))


RECORD_STOP_S = 1.0
"""With ``--duration``, how long ``record`` waits at its end for the agent to detach and
for the host-thread tier's last poll (one that reads symbol tables or attaches uprobes
can take seconds): ``--duration 1`` returns within 3 s of its start."""
STATUS_S = 1.0
"""How often ``record`` updates its status line and looks at its target (a launched
one's exit wakes it at once: :func:`_wake_on_exit`)."""


def _wake_on_exit(process: subprocess.Popen, wake: threading.Event) -> None:
    """Set ``wake`` the moment ``process`` ends (its Popen still reaps it): a recorded
    job's wall time gets no polling period added (it had up to 50 ms, once 1 s)."""

    def watch() -> None:
        with contextlib.suppress(OSError):  # ChildProcessError: reaped already
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        wake.set()

    threading.Thread(target=watch, name="gtop-target-exit", daemon=True).start()


def _check_recording_name(path: Path) -> None:
    """Refuse a name that promises another format: ``record`` writes only ``.gtop``
    (SQLite); other formats come from ``gtop export``."""
    name = path.name.lower()
    if any(name.endswith(suffix) for suffix in FOREIGN_SUFFIXES):
        gtop_name = path.with_name(path.name.split(".")[0] + ".gtop")
        raise UserError(
            f"{path}: gtop record writes a .gtop recording (SQLite), not that format; record "
            f"to {gtop_name}, then convert it: gtop export {gtop_name} ... -o {path}"
        )


def cmd_record(config: Config) -> int:
    from gtop.session.probe_requests import PendingProbes

    assert config.output is not None
    _check_recording_name(config.output)
    _check_output(config.output, config.overwrite)
    source = _live_source(config, attach_now=False)
    stop = threading.Event()
    received: list[int] = []

    def on_signal(sig: int, _frame: object) -> None:
        received.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    started = time.monotonic()
    # first, before the recording's file: the agent waits for the target's safe point
    attaching = _attach_while_recording(source, config)
    try:
        recorder = source.start_recording(config.output, overwrite=config.overwrite)
    except OSError as exc:
        source.stop()  # the agent detaches, its folder goes
        if isinstance(exc, FileExistsError):
            raise UserError(f"{config.output} exists (use --force to overwrite)") from None
        raise UserError(f"cannot create {config.output}: {exc.strerror or exc}") from None
    source.start_in_background()  # the clock runs meanwhile (--duration)
    _check_forced_tier_started(source, config)
    interactive = sys.stderr.isatty()
    shown = -1
    if source.process is not None:
        _wake_on_exit(source.process, stop)
    probes = PendingProbes(config.probes)
    try:
        while True:
            attaching = _say_attach_error(source, attaching)
            for problem in probes.send(source, source.pid):
                print(f"gtop: {problem}", file=sys.stderr)
            wait_s = STATUS_S
            if config.duration_s is not None:
                wait_s = min(wait_s, max(0.0, started + config.duration_s - time.monotonic()))
            woken = stop.wait(wait_s)
            elapsed = time.monotonic() - started
            if interactive and int(elapsed) != shown:
                shown = int(elapsed)
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
            if woken:  # SIGINT or SIGTERM
                break
    finally:
        source.stop(RECORD_STOP_S if config.duration_s is not None else None)
    if interactive:
        print(file=sys.stderr)
    for problem in source.stop_problems:
        print(f"gtop: {problem}", file=sys.stderr)
    _say_attach_error(source, attaching, final=True)  # stop() said why, if still under way
    if config.cmd and source.target_alive():
        # the agent has detached: the launched command runs on at full speed
        print(f"gtop: {config.cmd[0]} (pid {source.pid}) runs on untraced", file=sys.stderr)
    if recorder.error:
        raise UserError(recorder.error)
    print(f"gtop: wrote {config.output} ({recorder.rows()} rows)", file=sys.stderr)
    return _record_status(received, source.exit_status())


def _record_status(signals: list[int], target_status: int | None) -> int:
    """``gtop record``'s exit status, as ``perf record`` gives it: 128+N when signal N
    (Ctrl-C: 130) ended the recording, else a launched command's own status (128+N when
    a signal killed it), else 0."""
    if signals:
        return 128 + signals[0]
    return target_status or 0


def _say_attach_error(
    source, attaching: threading.Thread | None, final: bool = False
) -> threading.Thread | None:
    """Once a background attach has ended (or ``final``), say why it failed, if it did;
    None once said."""
    if attaching is None or (attaching.is_alive() and not final):
        return attaching
    if source.agent_error:
        print(f"\ngtop: {source.agent_error}; recorded NVML and host data only", file=sys.stderr)
    return None


def _attach_while_recording(source, config: Config) -> threading.Thread | None:
    """Attach the agent to ``record --pid``'s target on a thread, so that ``--duration``
    counts from the start of the recording, attach included (None: nothing to attach)."""
    if config.pid is None or not config.agent or config.cmd:
        return None
    wait_s = config.duration_s if config.duration_s is not None else ATTACH_WAIT_S
    try:
        return source.attach_agent_in_background(config.agent_mode, max(wait_s, 0.1))
    except ValueError as exc:
        source.stop()
        raise UserError(str(exc)) from None


ATTACH_WAIT_S = 10.0
"""Without ``--duration``, how long ``record --pid`` waits for the agent to report before it
says the agent has not started (it keeps recording, and the agent may still come)."""


def cmd_report(config: Config) -> int:
    from gtop.analysis.report.report_text import format_report
    from gtop.recordings.report_data import read_report

    if len(config.files) > 2:
        raise UserError(f"report takes one recording, or two to compare; got {len(config.files)}")
    if len(config.files) == 2:
        if config.what_if:
            raise UserError("--what-if takes one recording (the one to replay)")
        return _compare(config)
    assert config.file is not None
    with _open_recording(config.file) as rec:
        try:
            report = read_report(rec, *config.window, asked=config.what_if)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if config.what_if and report.get("what_if") is None:
        print("gtop: --what-if: no exact GPU work (CUPTI records) to replay", file=sys.stderr)
    emit(json.dumps(report, indent=2) if config.json else format_report(report, _text_width()))
    return 0


def _text_width() -> int:
    """A text report's width: the report's own, or a narrower terminal's (the report
    keeps :data:`~gtop.analysis.report.report_text.MIN_WIDTH` at least)."""
    from gtop.analysis.report.report_text import WIDTH

    return min(WIDTH, os.get_terminal_size().columns) if sys.stdout.isatty() else WIDTH


def _compare(config: Config) -> int:
    """``gtop report A B``: both reports side by side (:mod:`gtop.analysis.report.compare`)."""
    from gtop.analysis.report.compare import compare_reports, format_compare
    from gtop.recordings.report_data import read_pair

    a, b = config.files
    with _open_recording(a) as rec_a, _open_recording(b) as rec_b:
        try:
            reports = read_pair((rec_a, rec_b), *config.window)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    doc = compare_reports((a.name, b.name), reports)
    emit(json.dumps(doc, indent=2) if config.json else format_compare(doc, _text_width()))
    return 0


def cmd_export(config: Config) -> int:
    from gtop.recordings.exporters import command as export_cli

    assert config.export_args is not None
    return export_cli.run(config.export_args)


def cmd_merge(config: Config) -> int:
    from gtop.recordings.merge import MergeError, merge
    from gtop.recordings.reader import Recording, RecordingError

    assert config.output is not None
    try:
        out = merge(config.files, config.output, overwrite=config.overwrite)
    except (MergeError, RecordingError) as exc:
        raise UserError(str(exc)) from None
    except FileExistsError:
        raise UserError(f"{config.output} exists (--force overwrites it)") from None
    except OSError as exc:
        raise UserError(f"cannot write {config.output}: {exc.strerror or exc}") from None
    with Recording(out) as rec:
        for src in rec.meta.get("merged_from", []):
            print(
                f"gtop: {src['file']} ({src['host']}): {src['offset_ns'] / 1e6:+.3f} ms "
                f"({src['basis']})",
                file=sys.stderr,
            )
    print(f"gtop: wrote {out}", file=sys.stderr)
    return 0


def cmd_probe(config: Config) -> int:
    from gtop.probes import command as probe_cli

    assert config.probe_args is not None
    return probe_cli.run(config.probe_args)


def cmd_doctor(config: Config) -> int:
    from gtop.doctor import format_checks, run_checks

    emit(format_checks(run_checks()))
    return 0


COMMANDS = {
    "top": cmd_top,
    "run": cmd_top,
    "record": cmd_record,
    "replay": cmd_replay,
    "report": cmd_report,
    "export": cmd_export,
    "merge": cmd_merge,
    "demo": cmd_demo,
    "doctor": cmd_doctor,
    "serve": cmd_serve,
    "probe": cmd_probe,
}


def run() -> NoReturn:
    """The `gtop` command: :func:`main`, then an exit that skips the interpreter's teardown.

    A live session that named CUDA libraries' frames holds their symbol tables (millions
    of small objects); tearing them down took ~8 s of CPU after an 8-worker DataLoader job
    under `gtop record` on an H100 (startup_overhead.py's profile: main-thread samples with
    no Python frame). Everything gtop writes is committed and closed when main() returns,
    so only the standard streams are flushed. An exception still unwinds as usual.
    """
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # closed, or a broken pipe
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    config = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return COMMANDS[config.command](config)
    except (UserError, OutputFailed) as exc:
        if isinstance(exc, OutputFailed):
            silence()  # what is still buffered goes nowhere, not into a second error
        print(f"gtop: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except OutputClosed:
        silence()
        return EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        return 130


def _emit_or_exit(text: str) -> None:
    """:func:`emit` outside :func:`main`'s handlers (argparse actions): a closed pipe
    ends quietly, another write error in one line."""
    try:
        emit(text)
    except OutputClosed:
        silence()
        sys.exit(EXIT_PIPE_CLOSED)
    except OutputFailed as exc:
        silence()
        sys.exit(f"gtop: {exc}")
