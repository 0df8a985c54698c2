"""Run one gtop command line in a forked child, bounded in time and address space.

The parent imports gtop once (by running each command once, as gtop imports lazily);
each child runs ``gtop.cli.main(argv)`` as the console
script would (stdout and stderr to a file), under ``RLIMIT_AS`` and ``RLIMIT_CPU``. A hang
is judged by the CPU time the child burns, not by the clock: on a loaded machine a
0.3 s report can take 30 s of wall time. An alarm at :data:`WALL_FACTOR` times the CPU
limit still ends a child that blocks without computing. Forking
costs milliseconds where a fresh interpreter costs half a second, so hundreds of
variants fit in a test. A traceback is whatever escapes ``main``.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TypeVar

from gtop import cli
from gtop.cli.replay import demo_recording
from gtop.recordings.exporters import FORMATS

GIB = 1 << 30
T = TypeVar("T")
TRACEBACK_EXIT = 70
WALL_FACTOR = 10
"""A child blocked (not computing) for this many times its CPU limit is killed."""


@dataclass(frozen=True)
class Outcome:
    status: int | None
    """Exit status; None when the child was killed (by the alarm or for memory)."""
    stdout: str
    output: str
    """What it printed on stderr."""
    wall_s: float
    cpu_s: float
    """User and system CPU seconds the child used (what a hang is judged by)."""
    max_rss_mib: float

    @property
    def traceback(self) -> bool:
        return self.status == TRACEBACK_EXIT or "Traceback (most recent call last)" in self.output

    @property
    def hang(self) -> bool:
        return self.status is None

    @property
    def clean(self) -> bool:
        """Exit 0, or a non-zero exit whose stderr is one ``gtop:`` line."""
        if self.status == 0:
            return not self.traceback
        lines = [line for line in self.output.splitlines() if line.strip()]
        return self.status is not None and len(lines) == 1 and lines[0].startswith("gtop:")


def _address_space() -> int:
    """Bytes of address space this process has mapped (``VmSize``). A test worker that
    ran UI tests first holds over 1 GiB (threads' stacks and malloc arenas), and a child
    limited to 1 GiB in all then could not even grow its stack: deeply nested JSON in a
    damaged recording died of SIGSEGV there, not of gtop's doing."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def _child(
    argv: list[str], out: IO[bytes], err: IO[bytes], limit_bytes: int, timeout_s: int
) -> None:
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child exits with _exit
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    room = _address_space() + limit_bytes  # over what the forked test process holds
    resource.setrlimit(resource.RLIMIT_AS, (room, room))
    resource.setrlimit(resource.RLIMIT_CPU, (timeout_s, timeout_s + 1))  # SIGXCPU kills it
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # and leaves no core file
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
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


@functools.cache
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
class Child:
    """A gtop command line running in a forked child."""

    pid: int
    out: IO[bytes]
    err: IO[bytes]
    started: float

    def wait(self) -> Outcome:
        _, wait_status, usage = os.wait4(self.pid, 0)
        wall = time.monotonic() - self.started
        texts = []
        for f in (self.out, self.err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
            f.close()
        status = os.waitstatus_to_exitcode(wait_status)
        cpu = usage.ru_utime + usage.ru_stime
        return Outcome(status if status >= 0 else None, *texts, wall, cpu, usage.ru_maxrss / 1024)


def spawn(argv: list[str], limit_bytes: int = GIB, timeout_s: int = 30) -> Child:
    """Start ``gtop ARGV`` in a forked child allowed ``limit_bytes`` of address space more
    than it inherits and ``timeout_s`` seconds of CPU."""
    _warm_up()
    out = tempfile.TemporaryFile()  # noqa: SIM115 - Child.wait closes both
    err = tempfile.TemporaryFile()  # noqa: SIM115
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        _child(argv, out, err, limit_bytes, timeout_s)
    return Child(pid, out, err, started)


def run_gtop(argv: list[str], limit_bytes: int = GIB, timeout_s: int = 30) -> Outcome:
    """``gtop ARGV`` in a forked child, waited for."""
    return spawn(argv, limit_bytes, timeout_s).wait()


def run_all(
    jobs: Iterable[tuple[T, list[str]]], parallel: int, limit_bytes: int = GIB, timeout_s: int = 30
) -> Iterator[tuple[T, Outcome]]:
    """Each job's command line, up to ``parallel`` children at once; yields ``(tag,
    outcome)`` as they finish. A job's files must stay until its outcome is yielded."""
    running: dict[int, tuple[T, Child]] = {}
    for tag, argv in jobs:
        while len(running) >= parallel:
            yield _reap(running)
        child = spawn(argv, limit_bytes, timeout_s)
        running[child.pid] = (tag, child)
    while running:
        yield _reap(running)


def _reap(running: dict[int, tuple[T, Child]]) -> tuple[T, Outcome]:
    """The first of ``running`` to finish (polled: only our own children are waited)."""
    while True:
        for pid, (tag, child) in running.items():
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                del running[pid]
                return tag, child.wait()
        time.sleep(0.005)
