"""The process that forks the fuzz children: ``python3 -m tests.fuzz.server``.

It imports gtop once (running report, ``replay --once`` and every export once, as gtop
imports lazily), then reads one JSON request a line on stdin (``id``, ``argv``,
``limit_bytes``, ``timeout_s``), forks a child for each at once and writes one JSON
outcome a line on stdout as each child ends; at the end of stdin it waits for its
children and exits. A test worker that ran UI tests holds a heap of millions of objects,
and a fork of it cost the child ~40 ms and the worker ~20 ms of system time (page
tables, copies on write); a fork of this small process costs a few.

Each child runs ``gtop.cli.main(argv)`` as the console script would (stdout and stderr
to files), under ``RLIMIT_AS`` and ``RLIMIT_CPU``. A hang is judged by the CPU time the
child burns, not by the clock: on a loaded machine a 0.3 s report can take 30 s of wall
time. An alarm at :data:`WALL_FACTOR` times the CPU limit still ends a child that blocks
without computing. A traceback is whatever escapes ``main``.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from typing import IO

from gtop import cli
from gtop.cli.replay import demo_recording
from gtop.recordings.exporters import FORMATS

TRACEBACK_EXIT = 70
WALL_FACTOR = 10
"""A child blocked (not computing) for this many times its CPU limit is killed."""


def _address_space() -> int:
    """Bytes of address space this process has mapped (``VmSize``): a child's limit is
    counted over what it inherits (threads' stacks and malloc arenas of the parent would
    otherwise leave it no room to grow its stack)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def _child(
    argv: list[str], out: IO[bytes], err: IO[bytes], limit_bytes: int, timeout_s: int
) -> None:
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child exits with _exit
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    room = _address_space() + limit_bytes  # over what the forking process holds
    resource.setrlimit(resource.RLIMIT_AS, (room, room))
    resource.setrlimit(resource.RLIMIT_CPU, (timeout_s, timeout_s + 1))  # SIGXCPU kills it
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # and leaves no core file
    signal.alarm(timeout_s * WALL_FACTOR)
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        traceback.print_exc()
        status = TRACEBACK_EXIT
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status or 0)


def _warm_up() -> None:
    """Run report, ``replay --once`` and every export once here, so that children inherit
    their imports (a replay child importing its own took 0.2 s CPU, its frame 0.03 s)."""
    demo = demo_recording()
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with tempfile.TemporaryDirectory() as out, quiet[0], quiet[1]:
        cli.main(["report", str(demo)])
        cli.main(["replay", str(demo), "--once"])
        for fmt in FORMATS:
            cli.main(["export", str(demo), "--format", fmt, "-o", f"{out}/{fmt}"])


@dataclass
class _Running:
    id: int
    out: IO[bytes]
    err: IO[bytes]
    started: float
    start_rss_mib: float


def _fork(request: dict, reply: IO[str], wake: tuple[int, int]) -> tuple[int, _Running]:
    out = tempfile.TemporaryFile()  # noqa: SIM115 - _outcome closes both
    err = tempfile.TemporaryFile()  # noqa: SIM115
    running = _Running(request["id"], out, err, time.monotonic(), _resident_mib())
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in (*wake, reply.fileno()):
            os.close(fd)
        _child(request["argv"], out, err, request["limit_bytes"], request["timeout_s"])
    return pid, running


def _outcome(running: _Running, wait_status: int, usage: resource.struct_rusage) -> dict:
    texts = []
    for f in (running.out, running.err):
        f.seek(0)
        texts.append(f.read().decode(errors="replace"))
        f.close()
    status = os.waitstatus_to_exitcode(wait_status)
    return {
        "id": running.id,
        "status": status if status >= 0 else None,
        "stdout": texts[0],
        "output": texts[1],
        "wall_s": time.monotonic() - running.started,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "max_rss_mib": usage.ru_maxrss / 1024,
        "start_rss_mib": running.start_rss_mib,
    }


def serve(requests: int, reply: IO[str]) -> None:
    """Fork a child for each request line read from fd ``requests``; write each outcome
    to ``reply`` when its child ends; return once the requests end and all have ended."""
    wake = os.pipe()
    for fd in wake:
        os.set_blocking(fd, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake[1], warn_on_full_buffer=False)
    running: dict[int, _Running] = {}
    pending, reading = b"", True
    while reading or running:
        ready, _, _ = select.select([wake[0], *([requests] if reading else [])], [], [])
        if requests in ready:
            data = os.read(requests, 1 << 16)
            reading = bool(data)
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                pid, child = _fork(json.loads(line), reply, wake)
                running[pid] = child
        with contextlib.suppress(BlockingIOError):
            os.read(wake[0], 1 << 12)
        while running:
            pid, wait_status, usage = os.wait4(-1, os.WNOHANG)
            if pid == 0:
                break
            reply.write(json.dumps(_outcome(running.pop(pid), wait_status, usage)) + "\n")
            reply.flush()


def main() -> None:
    _warm_up()
    gc.freeze()  # the children's collections skip what they inherit (no copy on write)
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # stray prints stay out of the replies
    serve(0, reply)


if __name__ == "__main__":
    main()
