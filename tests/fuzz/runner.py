"""Run gtop command lines in forked children, bounded in time and address space.

The children are forked by one small process per test process (:mod:`tests.fuzz.server`,
started on first use), not by the test process itself: see there for how each child is
bounded and judged. Forking costs milliseconds where a fresh interpreter costs half a
second, so hundreds of variants fit in a test.
"""

from __future__ import annotations

import atexit
import functools
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tests.fuzz.server import TRACEBACK_EXIT

REPO = Path(__file__).resolve().parent.parent.parent
GIB = 1 << 30
T = TypeVar("T")


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
    start_rss_mib: float
    """The forking process's resident size when it forked: the child's peak starts there."""

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


class _Server:
    """The fork server: requests in on its stdin, outcomes back on its stdout."""

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's stderr, for errors
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.server"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.next_id = 0
        atexit.register(self.close)

    def start(self, argv: list[str], limit_bytes: int, timeout_s: int) -> int:
        self.next_id += 1
        request = {"id": self.next_id, "argv": argv}
        request |= {"limit_bytes": limit_bytes, "timeout_s": timeout_s}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self.next_id

    def finished(self) -> tuple[int, Outcome]:
        """The next child to end: its request's id and outcome."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.log.seek(0)
            raise RuntimeError(f"the fork server ended: {self.log.read().decode()[-3000:]}")
        reply = json.loads(line)
        return reply.pop("id"), Outcome(**reply)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


@functools.cache
def _server() -> _Server:
    return _Server()


def run_gtop(argv: list[str], limit_bytes: int = GIB, timeout_s: int = 30) -> Outcome:
    """``gtop ARGV`` in a forked child allowed ``limit_bytes`` of address space more than
    it inherits and ``timeout_s`` seconds of CPU, waited for."""
    ((_, outcome),) = run_all([(None, argv)], 1, limit_bytes, timeout_s)
    return outcome


def run_all(
    jobs: Iterable[tuple[T, list[str]]], parallel: int, limit_bytes: int = GIB, timeout_s: int = 30
) -> Iterator[tuple[T, Outcome]]:
    """Each job's command line, up to ``parallel`` children at once; yields ``(tag,
    outcome)`` as they finish. A job's files must stay until its outcome is yielded."""
    server = _server()
    running: dict[int, T] = {}
    try:
        for tag, argv in jobs:
            while len(running) >= parallel:
                ended, outcome = server.finished()
                yield running.pop(ended), outcome
            running[server.start(argv, limit_bytes, timeout_s)] = tag
        while running:
            ended, outcome = server.finished()
            yield running.pop(ended), outcome
    finally:  # left early: the next caller must not read these outcomes
        while running:
            running.pop(server.finished()[0])
