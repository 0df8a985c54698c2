"""The injector: a child process that looks at an attach's target and queues the agent's
start code for its next safe point (:mod:`gtop.collectors.agent.safepoint`).

gtop starts it first, before its own heavy imports (``gtop record --pid``: before numpy),
with the target's pid. The child reads which Python the target runs
(:func:`~gtop.collectors.agent.target.inspect`) and where the functions the injection
calls lie (:func:`~gtop.collectors.agent.procsyms.find_symbols`), reports both on one
line, and waits for the code. That work (on the H200: 9 ms alone, 0.17 s while it shared
gtop's GIL with the collectors' start) runs on an interpreter of its own, beside gtop's
start instead of after it, and never holds gtop's GIL. Only then does gtop check ptrace,
open its folders to the target's user and send the code; the child queues it and exits.

A child, so that a tracee that will not stop cannot hang gtop: killing the child detaches
ptrace. Until it has the code it only reads ``/proc`` and files; closed unused, it is
killed, having touched nothing.
"""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import sys
from dataclasses import astuple
from pathlib import Path
from typing import Any

from gtop.collectors.agent.safepoint import InjectError, Symbols, queue_code
from gtop.collectors.agent.target import AttachError, Target

INJECT_TIMEOUT_S = 10.0
"""How long the child may take to report, and then to queue the code."""
INJECTOR_EXIT_S = 2.0
"""How long a child that had the code may take to exit once done before it is killed."""
PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
"""The folder holding this ``gtop`` package."""
INJECTOR = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from gtop.collectors.agent.injector import main; main()"
)
"""Run by gtop's own interpreter in isolated mode (``-I``: no working folder, no
``PYTHON*`` variables on its path; ``-S``: no site), importing gtop from where this gtop
lives (the child needs the standard library only)."""


class Injector:
    """The child for ``pid``, started now; :meth:`target`, then :meth:`queue` or
    :meth:`close`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", INJECTOR, PACKAGE_PARENT, str(pid)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._report: dict[str, Any] | None = None
        self._sent = False

    def _look(self) -> dict[str, Any]:
        """The child's report (waited for once): ``uid``, ``python`` and ``symbols`` (or
        ``symbols_error``), or ``refused`` (the target cannot take the agent: one line),
        or ``failed`` (the child ended without a report: its last line)."""
        if self._report is not None:
            return self._report
        ready, _, _ = select.select([self.proc.stdout], [], [], INJECT_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""  # type: ignore[union-attr]
        if not ready:
            self._kill()
            self._report = {"failed": f"no answer in {INJECT_TIMEOUT_S:.0f} s"}
        elif line:
            self._report = json.loads(line)
        else:
            self._report = {"failed": self._last_error()}
        return self._report

    def _last_error(self) -> str:
        try:
            self.proc.wait(INJECTOR_EXIT_S)
            err = self.proc.stderr.read()  # type: ignore[union-attr]
        except (subprocess.TimeoutExpired, OSError, ValueError):
            err = ""
        return (err.strip().splitlines() or ["unknown error"])[-1].removeprefix("gtop: ")

    def target(self) -> Target:
        """Who the target is and which Python it runs.

        Raises:
            AttachError: it cannot take the agent (no such process, not CPython 3.10+).
            InjectError: the child failed (one line).
        """
        report = self._look()
        if "failed" in report:
            raise InjectError(report["failed"])
        if "refused" in report:
            raise AttachError(report["refused"])
        return Target(self.pid, int(report["uid"]), tuple(report["python"]))  # type: ignore[arg-type]

    def queue(self, code: str) -> str | None:
        """Queue ``code`` for the target's next safe point (see
        :func:`~gtop.collectors.agent.safepoint.queue_code`); None, or one line saying
        why not. The child ends."""
        report = self._look()
        why = report.get("failed") or report.get("refused") or report.get("symbols_error")
        if why is not None:
            return why
        self._sent = True
        try:
            _, err = self.proc.communicate(code, timeout=INJECT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.close()
            return f"did not finish in {INJECT_TIMEOUT_S:.0f} s; is pid {self.pid} stopped?"
        if self.proc.returncode == 0:
            return None
        return (err.strip().splitlines() or ["unknown error"])[-1].removeprefix("gtop: ")

    def close(self) -> None:
        """End the child: unused, it is killed (it has only read files); given the code,
        it has a while to finish (stuck: it is killed, which detaches ptrace)."""
        if self.proc.poll() is None:
            if not self._sent:
                self._kill()
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(INJECTOR_EXIT_S)
            except subprocess.TimeoutExpired:
                self._kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.close()  # type: ignore[union-attr]

    def _kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


# --- the child ---------------------------------------------------------------------------


def _report(pid: int) -> dict[str, Any]:
    """What :meth:`Injector._look` reads (see there)."""
    from gtop.collectors.agent.procsyms import find_symbols
    from gtop.collectors.agent.target import inspect

    try:
        target = inspect(pid)
    except AttachError as exc:
        return {"refused": str(exc)}
    report: dict[str, Any] = {"uid": target.uid, "python": list(target.python)}
    if target.python < (3, 14):  # 3.14+: gtop calls sys.remote_exec itself
        try:
            report["symbols"] = list(astuple(find_symbols(pid)))
        except InjectError as exc:
            report["symbols_error"] = str(exc)
    return report


def main() -> None:
    """``python -I -S -c INJECTOR PATH PID``: one report line on stdout, then the code on
    stdin (nothing: exits without touching the target); one error line on failure."""
    pid = int(sys.argv[1])
    report = _report(pid)
    sys.stdout.write(json.dumps(report) + "\n")
    sys.stdout.flush()
    if "symbols" not in report:
        return
    code = sys.stdin.buffer.read()
    if not code:
        return
    try:
        queue_code(pid, Symbols(*report["symbols"]), code)
    except InjectError as exc:
        print(f"gtop: {exc}", file=sys.stderr)
        sys.exit(1)
