"""Launching a command held at its ``exec``, so that collectors know its pid before it runs.

The host-thread tracer follows a pid and its descendants; a command started before the
tracer opens runs its first instructions (its startup, a phase of the report) unseen. So
a launched command starts as a gate: a small Python (``-I -S``: no site, no environment
variables read; ~10 ms) in the command's own process, which waits on a pipe, then execs
the command in place, keeping the pid. It does what ``subprocess.Popen`` does before an
exec: the signals Python ignores (``SIGPIPE``, ``SIGXFSZ``) are back to their defaults,
``PATH`` is searched the same way, and an exec failure comes back as its errno on a
second pipe (closed on a successful exec), raised by :meth:`Held.release` as the
``OSError`` Popen would have raised. If gtop dies before the release, the gate exits and
the command never runs. The tracer sees the few milliseconds the gate waits as the
target's main thread blocked in ``select`` ("blocked: poll"), not reading a file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

GATE = """\
import os, select, signal, sys
go, status = int(sys.argv[1]), int(sys.argv[2])
for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
    if hasattr(signal, name):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
select.select([go], [], [])
if os.read(go, 1) != b"g":
    os._exit(1)
os.close(go)
os.set_inheritable(status, False)
try:
    os.execvp(sys.argv[3], sys.argv[3:])
except OSError as exc:
    os.write(status, str(exc.errno).encode())
os._exit(127)
"""
"""The gate's code: ``python -I -S -c GATE GO_FD STATUS_FD CMD...``."""


class Held:
    """``cmd`` started (``popen``: ``subprocess.Popen``'s arguments) and held before its
    exec until :meth:`release`; with ``hold`` False, simply started.

    Raises:
        OSError: ``cmd`` cannot be started (not held: from Popen itself).
    """

    def __init__(self, cmd: list[str], hold: bool = True, **popen: Any) -> None:
        self.cmd = cmd
        self._go: int | None = None
        self._status: int | None = None
        if not hold or not sys.executable:
            self.process = subprocess.Popen(cmd, **popen)
            return
        go_r, self._go = os.pipe()
        self._status, status_w = os.pipe()
        try:
            gate = [sys.executable, "-I", "-S", "-c", GATE, str(go_r), str(status_w), *cmd]
            self.process = subprocess.Popen(gate, pass_fds=(go_r, status_w), **popen)
        except BaseException:
            self._close()
            raise
        finally:
            os.close(go_r)
            os.close(status_w)

    @property
    def pid(self) -> int:
        return self.process.pid

    def release(self) -> subprocess.Popen:
        """Let the command run; returns once it has replaced the gate.

        Raises:
            OSError: the exec failed (the gate has exited).
        """
        if self._go is None or self._status is None:
            return self.process
        try:
            os.write(self._go, b"g")
            os.close(self._go)
            self._go = None
            failed = b""
            while chunk := os.read(self._status, 64):
                failed += chunk
        finally:
            self._close()
        if failed:
            self.process.wait()
            errno = int(failed)
            raise OSError(errno, os.strerror(errno))
        return self.process

    def cancel(self) -> None:
        """The command never runs: the gate exits."""
        self._close()
        if self.process.poll() is None:
            self.process.wait()

    def _close(self) -> None:
        for fd in (self._go, self._status):
            if fd is not None:
                os.close(fd)
        self._go = self._status = None
