"""The command line's parser: argv into a typed, validated :class:`Config` (pure: no
command runs, no numpy)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from gtop import __version__
from gtop.core.pyframe import DEFAULT_RATE_HZ as DEFAULT_PY_RATE_HZ
from gtop.core.pyframe import MAX_RATE_HZ as MAX_PY_RATE_HZ
from gtop.core.stdout import EXIT_PIPE_CLOSED, OutputClosed, OutputFailed, emit, silence
from gtop.probes.options import add_arguments as add_probe_arguments
from gtop.recordings.options import add_export_arguments, add_window_options

if TYPE_CHECKING:
    from gtop.session.probe_requests import ProbeRequest

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
DEFAULT_INTERVAL_S = 0.5
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
        "synchronisation, NVTX ranges; a CUDA graph launch as one record, or every node "
        "when attached to a process whose CUDA had started), graph-nodes (the same with "
        "every node of every graph launch; key g in the Kernels tab switches live), full "
        "(graph nodes, runtime/driver API calls, CUPTI overhead), or a comma list of "
        "kinds (graph,kernel,memcpy,memset,sync,runtime,driver,marker,overhead). NVTX "
        "ranges come only from a command gtop starts: it sets NVTX_INJECTION64_PATH to "
        "the agent's libcupti (unless set); NVTX reads it once, so --pid cannot",
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
