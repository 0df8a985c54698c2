"""Python frames from ``py-spy dump --json --nonblocking``, per process, a few times a second.

The fallback where Austin is missing (:func:`gtop.collectors.threads.pystacks.sampler`).
Each dump is a subprocess that reads the target without pausing it and reports every
thread's stack with py-spy's ``active`` flag. ``py-spy record`` streams at 100 Hz but its
output has no idle flag, so blocked intervals would take the frames of the phase beside
them; the dumps' rate is capped at :data:`MAX_RATE_HZ`.
"""

from __future__ import annotations

import contextlib
import json
import random
import subprocess
import threading
import time
from typing import TYPE_CHECKING

from gtop.collectors.threads.pystacks import PyStackSampler
from gtop.core.pyframe import PyFrame

if TYPE_CHECKING:
    from gtop.collectors.threads.tier import ThreadCollector

DUMP_TIMEOUT_S = 5.0
MAX_RATE_HZ = 4.0
"""Dumps per second per process at most (one dump takes 0.1-1 s of py-spy's CPU)."""


def _frames(thread: dict) -> tuple[str, ...]:
    """py-spy frames (innermost first) as ``func (file:line)``, outermost first."""
    names = [
        str(PyFrame(f["name"], f.get("short_filename") or f.get("filename") or "", f["line"]))
        for f in thread["frames"]
    ]
    return tuple(reversed(names))


class PySpyDumpSampler(PyStackSampler):
    """``py-spy dump`` of every process of the tree, one after another, at ``rate_hz``."""

    name = "py-spy dump"

    def __init__(self, pid: int, rate_hz: float, exe: str, idle: bool = True) -> None:
        super().__init__(pid, min(rate_hz, MAX_RATE_HZ), idle)
        self._exe = exe
        self._running: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, collector: ThreadCollector) -> None:
        self._thread = threading.Thread(
            target=self._run, args=(collector,), name="gtop-pyspy", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop now: a dump in flight is killed (one takes up to ~1 s; gtop's exit waited
        for it, and for the dumps of every other process of the tree after it)."""
        self._stop.set()
        with self._lock:
            running = self._running
        if running is not None:
            with contextlib.suppress(OSError):
                running.kill()
        if self._thread is not None:
            self._thread.join()

    def _run(self, collector: ThreadCollector) -> None:
        while not self._stop.is_set():
            for pid in sorted(set(collector.threads.values())):
                if self._stop.is_set():
                    break
                self._dump(pid)
            self._stop.wait(random.uniform(0.8, 1.2) / self.rate_hz)

    def _spy(self, cmd: list[str]) -> str:
        """py-spy's output; raises OSError (with its stderr) when it failed."""
        with subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        ) as proc:
            with self._lock:
                self._running = proc
            try:
                if self._stop.is_set():
                    proc.kill()  # stop() came before it was registered
                out, err = proc.communicate(timeout=DUMP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                err = f"py-spy dump took over {DUMP_TIMEOUT_S} s"
            finally:
                with self._lock:
                    self._running = None
        if proc.returncode != 0:
            raise OSError(err.strip() or f"py-spy exited with {proc.returncode}")
        return out

    def _dump(self, pid: int) -> None:
        cmd = [self._exe, "dump", "--json", "--nonblocking", "--pid", str(pid)]
        t0 = time.monotonic_ns()
        try:
            threads = json.loads(self._spy(cmd))
            if not isinstance(threads, list):
                raise ValueError(f"py-spy dump gave {type(threads).__name__}, not a list")
        except (OSError, ValueError) as exc:
            if not self._stop.is_set():  # killed by stop(): not an error
                self.error(str(exc))
            return
        t1 = time.monotonic_ns()
        # py-spy reads the target late in its run (measured here: 60-100% of the way
        # through), so the read happened somewhere in [lo, t1]
        lo = t0 + (t1 - t0) * 6 // 10
        for th in threads:
            tid = th.get("os_thread_id")
            if not isinstance(tid, int):  # py-spy could not map it to an OS thread (seen
                continue  # on pyenv's 3.10.13): nothing to join it to
            self.add(tid, bool(th.get("active", True)), lo, t1, _frames(th))

    def pending_ns(self) -> int:
        return int(2.5e9 / self.rate_hz) if self._thread is not None else 0
