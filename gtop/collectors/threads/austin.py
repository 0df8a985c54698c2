"""Python frames streamed by Austin (``austin -P -f -i 10ms -p PID``), one per process.

Austin reads a CPython's frames from outside (``process_vm_readv``: the target never
stops) and writes one line per thread per sample::

    P<pid>;T<iid>:<tid>;<file>:<function>:<line>;... <µs since the last sample>,<idle>,<mem>

``idle`` is 1 when the thread was not running, so a blocked interval joins only samples
taken while it was blocked. Lines carry no timestamp: a run's samples are placed by the
sum of the per-sample intervals (all threads of one sampling pass share one), anchored
where a line's arrival minus that sum is least; stdout is a pseudo-terminal, so Austin
writes each line as it samples. Measured here: the sum keeps to the arrivals within
0.1 ms over seconds (benchmarks/RESULTS.md, "Python sampler").

One Austin per process of the collector's tree, started when the tree shows it. Austin
ends when the process's interpreter is gone (an ``exec``, or the gate gtop launches
commands through) and is started again; a process where it got no sample (not a Python,
or not one Austin reads) is retried a few times, then only once its executable changes.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import subprocess
import tempfile
import threading
import time
import tty
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from gtop.collectors.threads.pystacks import PyStackSampler
from gtop.core.pyframe import PyFrame, short_path

if TYPE_CHECKING:
    from gtop.collectors.threads.tier import ThreadCollector

COMMIT_NS = 100_000_000
"""Samples wait this long after arriving before they are placed (the anchor settles)."""
FOLLOW_S = 0.25
"""How often the tree is checked for processes to sample."""
STARTUP_MS = 1000
"""How long Austin waits for a just-started (or just exec'ed) interpreter to be readable."""
RETRIES = 3
"""Runs without a sample before a process is left alone until its executable changes."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class _Run:
    """One Austin process sampling one target process."""

    pid: int
    exe: str
    roots: tuple[str, ...]
    """The process's script folder and working directory (:func:`short_path`)."""
    proc: subprocess.Popen
    fd: int
    """The pseudo-terminal's master end: Austin's stdout."""
    err: IO[bytes]
    buf: bytes = b""
    cum_ns: int = 0
    """Sum of the sampling intervals so far: the current pass's time since Austin began."""
    delta: int = -1
    passed: set[int] = field(default_factory=set)
    """Threads of the current sampling pass."""
    anchor: int | None = None
    pending: list[list] = field(default_factory=list)
    """``[arrival, lo, hi, tid, running, frames]`` not yet placed: read between ``lo``
    and ``hi`` (sums of intervals; ``hi`` the next pass's start, None until it began)."""
    current: int = 0
    """Index in :attr:`pending` of the current pass's first sample."""
    samples: int = 0


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _as_owner(pid: int) -> dict:
    """Popen arguments that run Austin as ``pid``'s owner when gtop is root and the
    target is not: Austin may run the target's executable (``EXE -V``, to learn its
    Python version), which its owner controls, and root must never run it. The owner may
    read its own process; nothing is lent."""
    if os.geteuid() != 0:
        return {}
    try:
        st = os.stat(f"/proc/{pid}")
    except OSError:
        return {}
    if st.st_uid == 0:
        return {}
    return {"user": st.st_uid, "group": st.st_gid, "extra_groups": []}


def _roots(pid: int) -> tuple[str, ...]:
    """Where a process's own sources lie: its script's folder (``python [-opts] x.py``;
    the first argument that is a file), and its working directory."""
    cwd = _readlink(f"/proc/{pid}/cwd")
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")[1:]
    except OSError:
        return (cwd,)
    for arg in args:
        if arg in ("-c", "-m"):
            break
        if arg.endswith(".py") and not arg.startswith("-"):
            return (os.path.dirname(os.path.join(cwd, arg)), cwd)
    return (cwd,)


def _message(err: IO[bytes]) -> str:
    """Austin's complaint without its banner or colours."""
    err.seek(0)
    text = _ANSI.sub("", err.read().decode(errors="replace"))
    lines = [ln.strip() for ln in text.splitlines()]
    after = next((i + 1 for i, ln in enumerate(lines) if "[gcc" in ln or "[clang" in ln), 0)
    words = " ".join(ln for ln in lines[after:] if ln)
    return words.lstrip("👾🛑⚠️ ").strip() or "austin exited without a sample"


class AustinSampler(PyStackSampler):
    """Austin on every process of the tree at ``rate_hz``, its lines placed in time."""

    name = "austin"

    def __init__(self, pid: int, rate_hz: float, exe: str, idle: bool = True) -> None:
        super().__init__(pid, rate_hz, idle)
        self.sample_join_ns = int(1.5e9 / rate_hz)
        self._exe = exe
        self._runs: dict[int, _Run] = {}
        self._refused: dict[int, tuple[str, int, float]] = {}
        """``{pid: (exe, runs without a sample, not before)}``."""
        self._frames: dict[tuple[tuple[str, ...], str], str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, collector: ThreadCollector) -> None:
        self._thread = threading.Thread(
            target=self._loop, args=(collector,), name="gtop-austin", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def pending_ns(self) -> int:
        return COMMIT_NS + 200_000_000 if self._thread is not None else 0

    # --- the sampling thread ---------------------------------------------------------
    def _loop(self, collector: ThreadCollector) -> None:
        sel = selectors.DefaultSelector()
        followed = 0.0
        try:
            while not self._stop.is_set():
                if time.monotonic() - followed >= FOLLOW_S:
                    followed = time.monotonic()
                    for pid in sorted(set(collector.threads.values()) - set(self._runs)):
                        self._launch(pid, sel)
                for key, _ in sel.select(0.05):
                    self._read(key.data, sel)
                now = time.monotonic_ns()
                for run in self._runs.values():
                    self._place(run, now - COMMIT_NS)
        finally:
            for run in list(self._runs.values()):
                with contextlib.suppress(OSError):
                    run.proc.kill()
                self._end(run, sel)
            sel.close()

    def _launch(self, pid: int, sel: selectors.BaseSelector) -> None:
        exe = _readlink(f"/proc/{pid}/exe")
        if not exe:  # gone, or a kernel thread
            return
        refused = self._refused.get(pid)
        if (
            refused
            and refused[0] == exe
            and (refused[1] >= RETRIES or time.monotonic() < refused[2])
        ):
            return
        interval_us = max(int(1e6 / self.rate_hz), 1)
        cmd = [self._exe, "-P", "-f", "-i", str(interval_us), "-t", str(STARTUP_MS)]
        master, slave = os.openpty()
        tty.setraw(slave)  # no \r\n, no echo: the bytes as Austin writes them
        err = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _end)
        try:
            proc = subprocess.Popen(
                [*cmd, "-p", str(pid)],
                stdin=subprocess.DEVNULL,
                stdout=slave,
                stderr=err,
                **_as_owner(pid),
            )
        except OSError as exc:
            os.close(master)
            err.close()
            self.error(f"austin: {exc}")
            return
        finally:
            os.close(slave)
        run = _Run(pid, exe, _roots(pid), proc, master, err)
        self._runs[pid] = run
        sel.register(master, selectors.EVENT_READ, run)

    def _read(self, run: _Run, sel: selectors.BaseSelector) -> None:
        try:
            chunk = os.read(run.fd, 1 << 16)
        except OSError:  # EIO: Austin has exited and the terminal is closed
            chunk = b""
        if not chunk:
            self._end(run, sel)
            return
        arrival = time.monotonic_ns()
        *lines, run.buf = (run.buf + chunk).split(b"\n")
        for line in lines:
            self._parse(run, line.decode(errors="replace"), arrival)

    def _parse(self, run: _Run, line: str, arrival: int) -> None:
        head, _, metrics = line.rpartition(" ")
        if not head.startswith("P"):
            return  # metadata ("# python: 3.11.2"), blank lines
        try:
            delta_us, idle = metrics.split(",")[:2]
            fields = head.split(";")
            tid = int(fields[1].rpartition(":")[2])
            delta = int(delta_us)
        except (ValueError, IndexError):
            return
        if tid in run.passed or delta != run.delta:  # a new sampling pass
            run.cum_ns += delta * 1000
            run.delta, run.passed = delta, set()
            for entry in run.pending[run.current :]:
                entry[2] = run.cum_ns  # the last pass's reads ended before this one began
            run.current = len(run.pending)
        run.passed.add(tid)
        lag = arrival - run.cum_ns
        run.anchor = lag if run.anchor is None else min(run.anchor, lag)
        run.samples += 1
        frames = tuple(self._frame(run.roots, f) for f in fields[2:])
        run.pending.append([arrival, run.cum_ns, None, tid, idle != "1", frames])

    def _frame(self, roots: tuple[str, ...], raw: str) -> str:
        """``file:function:line`` as ``function (file:line)``, interned per process roots."""
        name = self._frames.get((roots, raw))
        if name is None:
            path, func, line = [*raw.rsplit(":", 2), "", ""][:3]
            where = short_path(path, roots)
            frame = PyFrame(func or raw, where, int(line) if line.isdigit() else 0)
            name = self._frames[(roots, raw)] = str(frame)
        return name

    def _place(self, run: _Run, before: int) -> None:
        """Add the samples of finished passes that arrived before ``before`` at their
        place in time: read in ``[anchor + lo, anchor + hi]``."""
        n = 0
        while n < run.current and run.pending[n][0] < before:
            n += 1
        if not n or run.anchor is None:
            return
        for _arrival, lo, hi, tid, running, frames in run.pending[:n]:
            self.add(tid, running, run.anchor + lo, run.anchor + hi, frames)
        del run.pending[:n]
        run.current -= n

    def _end(self, run: _Run, sel: selectors.BaseSelector) -> None:
        """Austin is done with the process: keep its samples, say why when it had none."""
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(run.fd)
        os.close(run.fd)
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.proc.wait(timeout=1)
        for entry in run.pending[run.current :]:  # the last pass: as long as the one before
            entry[2] = entry[1] + max(run.delta, 0) * 1000
        run.current = len(run.pending)
        self._place(run, time.monotonic_ns() + 1)
        if run.samples == 0 and not self._stop.is_set():
            refused = self._refused.get(run.pid)
            tries = refused[1] + 1 if refused and refused[0] == run.exe else 1
            self._refused[run.pid] = (run.exe, tries, time.monotonic() + 1.0)
            self.error(f"austin on pid {run.pid} ({run.exe}): {_message(run.err)}")
        else:
            self._refused.pop(run.pid, None)
        run.err.close()
        del self._runs[run.pid]
