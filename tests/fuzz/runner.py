"""Run one gtop command line in a forked child, bounded in time and address space.

The parent imports gtop once (by running each command once, as gtop imports lazily);
each child runs ``gtop.cli.main(argv)`` as the console
script would (stdout and stderr to a file), under ``RLIMIT_AS`` and an alarm. Forking
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
from dataclasses import dataclass

from gtop import cli
from gtop.recordings.exporters import EXPORTERS

GIB = 1 << 30
TRACEBACK_EXIT = 70


@dataclass(frozen=True)
class Outcome:
    status: int | None
    """Exit status; None when the child was killed (by the alarm or for memory)."""
    output: str
    wall_s: float
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


def _child(argv: list[str], out_fd: int, limit_bytes: int, timeout_s: int) -> None:
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the child exits with _exit
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(timeout_s)
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
    """Run report and every export once here, so that children inherit their imports."""
    demo = cli.demo_recording()
    quiet = contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO())
    with tempfile.TemporaryDirectory() as out, quiet[0], quiet[1]:
        cli.main(["report", str(demo)])
        for fmt in EXPORTERS:
            cli.main(["export", str(demo), "--format", fmt, "-o", f"{out}/{fmt}"])


def run_gtop(argv: list[str], limit_bytes: int = GIB, timeout_s: int = 30) -> Outcome:
    """``gtop ARGV`` in a forked child under ``limit_bytes`` of address space."""
    _warm_up()
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            _child(argv, out.fileno(), limit_bytes, timeout_s)
        _, wait_status, usage = os.wait4(pid, 0)
        wall = time.monotonic() - started
        out.seek(0)
        text = out.read().decode(errors="replace")
    status = os.waitstatus_to_exitcode(wait_status)
    return Outcome(status if status >= 0 else None, text, wall, usage.ru_maxrss / 1024)
