"""Python frames from an out-of-process sampler (``py-spy dump --json --nonblocking``).

CPython has no frame pointers, so BPF and perf user stacks stop at the interpreter loop.
py-spy reads the interpreter's memory from outside and reports each OS thread id's Python
stack; we keep the recent dumps per thread and join them to kernel/native stacks by thread
id and time (:meth:`PyStackSampler.match`). ``--nonblocking`` never pauses the target.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gtop.collectors.threads.tier import ThreadCollector

KEEP_NS = 30_000_000_000
"""How long sampled Python stacks are kept for matching against intervals."""


DUMP_TIMEOUT_S = 5.0
DEFAULT_RATE_HZ = 4.0
"""Dumps per second per process. A streaming sampler (``py-spy record`` at 100 Hz) was
tried and reverted: its trace carries no idle flag, so blocked intervals got the Python
frames of the phase next to them (tests/host/test_host_threads.py)."""


def available() -> str | None:
    """The py-spy binary: beside this interpreter (its venv's ``bin``, or the scripts
    folder pip installed into), else on ``PATH``; None when there is none."""
    scripts = Path(sysconfig.get_path("scripts"))
    for path in (Path(sys.executable).parent / "py-spy", scripts / "py-spy"):
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which("py-spy")


def _frames(thread: dict) -> tuple[str, ...]:
    """py-spy frames (innermost first) as names, outermost first."""
    names = [
        f"{f['name']} ({f.get('short_filename') or f.get('filename')})" for f in thread["frames"]
    ]
    return tuple(reversed(names))


class PyStackSampler:
    """Samples Python stacks of every process of a collector's tree at ``rate_hz``."""

    def __init__(self, pid: int, rate_hz: float = DEFAULT_RATE_HZ) -> None:
        self.pid = pid
        self.rate_hz = rate_hz
        self.stacks: list[tuple[str, ...]] = []
        """Distinct Python stacks seen; :meth:`match` returns indices into it."""
        self.dumps = 0
        self.errors = 0
        self.last_error = ""
        self._index: dict[tuple[str, ...], int] = {}
        # per (tid, running?): read windows and Python stack indices, in time order
        self._times: dict[tuple[int, bool], list[tuple[int, int]]] = defaultdict(list)
        self._ids: dict[tuple[int, bool], list[int]] = defaultdict(list)
        self._lock = threading.Lock()
        self._running: subprocess.Popen | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exe = available()

    def start(self, collector: ThreadCollector) -> None:
        if self._exe is None:
            self.last_error = (
                f"py-spy not found beside {sys.executable} nor on PATH: no Python frames"
            )
            return
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
        cmd = [str(self._exe), "dump", "--json", "--nonblocking", "--pid", str(pid)]
        t0 = time.monotonic_ns()
        try:
            threads = json.loads(self._spy(cmd))
            if not isinstance(threads, list):
                raise ValueError(f"py-spy dump gave {type(threads).__name__}, not a list")
        except (OSError, ValueError) as exc:
            if not self._stop.is_set():  # killed by stop(): not an error
                self.errors += 1
                self.last_error = str(exc).strip()[-200:]
            return
        t1 = time.monotonic_ns()
        # py-spy reads the target late in its run (measured here: 60-100% of the way
        # through), so the read happened somewhere in [lo, t1]
        lo = t0 + (t1 - t0) * 6 // 10
        with self._lock:
            self.dumps += 1
            for th in threads:
                frames = _frames(th)
                if not frames:
                    continue
                idx = self._index.setdefault(frames, len(self._index))
                if idx == len(self.stacks):
                    self.stacks.append(frames)
                key = (int(th["os_thread_id"]), bool(th.get("active", True)))
                self._times[key].append((lo, t1))
                self._ids[key].append(idx)
                if self._times[key][0][1] < t1 - KEEP_NS:
                    del self._times[key][0], self._ids[key][0]

    def match(
        self, tids: np.ndarray, t0: np.ndarray, t1: np.ndarray, running: np.ndarray
    ) -> np.ndarray:
        """For each ``(tid, [t0, t1], running)``: a Python stack read inside it, or -1.

        A dump joins only when its whole read window lies inside ``[t0, t1]`` and py-spy
        saw the thread in the same condition (``running``: on CPU or runnable, versus
        blocked), so an interval never borrows the frames of a neighbouring one; the
        latest such dump wins.
        """
        out = np.full(len(tids), -1, dtype=np.int64)
        keys = np.stack([tids.astype(np.int64), running.astype(np.int64)], axis=1)
        with self._lock:
            for tid, run in np.unique(keys, axis=0).tolist():
                times = self._times.get((tid, bool(run)))
                if not times:
                    continue
                sel = np.flatnonzero((keys[:, 0] == tid) & (keys[:, 1] == run))
                tarr = np.asarray(times)
                pos = np.searchsorted(tarr[:, 1], t1[sel], side="right") - 1
                ok = (pos >= 0) & (tarr[np.maximum(pos, 0), 0] >= t0[sel])
                out[sel[ok]] = np.asarray(self._ids[(tid, bool(run))])[pos[ok]]
        return out

    def pending_ns(self) -> int:
        """How far back records should wait so that dumps covering them have landed."""
        return int(2.5e9 / self.rate_hz) if self._thread is not None else 0
