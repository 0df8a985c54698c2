"""Python frames from a streaming out-of-process sampler: ``py-spy record`` at 100 Hz.

CPython has no frame pointers, so BPF and perf user stacks stop at the interpreter loop.
py-spy reads the interpreter's memory from outside. One ``py-spy record --format
chrometrace --idle --threads --nonblocking`` per process runs for :data:`CHUNK_S`
seconds; a new one starts every :data:`CHUNK_S`, so the next is attached (0.1-0.25 s
here) before the last one ends and the chunks overlap instead of leaving gaps. Each
chunk's trace is a list of begin/end events per thread, stamped when py-spy took the
sample: replayed, they give *runs*, spans over which a thread's Python stack stayed the
same. A thread's OS id comes from the ``thread (TID)`` frame ``--threads`` adds. Unlike
``py-spy dump``, the trace does not say whether a thread was idle, so runs join intervals
by time alone (:meth:`PyStackSampler.match`).

py-spy stamps its events from an ``Instant`` taken as it starts, which gtop cannot read;
the chunk's clock is placed between the spawn and the exit less the last stamp
(measured here, a 2-21 ms spread; the midpoint is used). ``--nonblocking`` never pauses
the target. py-spy is looked for beside the running interpreter first (a virtual
environment's ``bin``, which is not on ``PATH`` under sudo), then on ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gtop.agent import tmpdirs

if TYPE_CHECKING:
    from gtop.collectors.threads.tier import ThreadCollector

KEEP_NS = 30_000_000_000
"""How long sampled Python stacks are kept for matching against intervals."""
DEFAULT_RATE_HZ = 100.0
"""py-spy's own default rate."""
CHUNK_S = 1
"""Seconds one ``py-spy record`` samples (whole seconds: py-spy's ``--duration``); also
how far its stacks trail the records they join (see :meth:`PyStackSampler.pending_ns`)."""
MAX_CHUNKS_PER_PID = 3
"""Chunks of one process alive at once; past this, the next chunk waits (slow exits)."""


def available() -> str | None:
    """The py-spy binary: beside this interpreter (its venv's ``bin``, or the scripts
    folder pip installed into), else on ``PATH``; None when there is none."""
    scripts = Path(sysconfig.get_path("scripts"))
    for path in (Path(sys.executable).parent / "py-spy", scripts / "py-spy"):
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which("py-spy")


@dataclass(frozen=True)
class Run:
    """One thread's Python stack, unchanged from the sample at ``t0`` to the last sample
    before ``t1`` (CLOCK_MONOTONIC ns)."""

    tid: int
    t0: int
    t1: int
    frames: tuple[str, ...]
    """Outermost first, without py-spy's thread and process pseudo-frames."""


def _frame_name(event: dict[str, Any]) -> str:
    filename = (event.get("args") or {}).get("filename") or ""
    return f"{event['name']} ({os.path.basename(filename)})" if filename else event["name"]


def runs_of(events: list[dict[str, Any]], anchor_ns: int) -> list[Run]:
    """The runs in one chunk's chrometrace ``events`` (µs since py-spy's start, which
    was at ``anchor_ns``). py-spy writes events only where a thread's stack changed, all
    of one sample with the same stamp, and ends every open frame at its last stamp."""
    stacks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    since: dict[tuple[int, int], int] = {}
    out: list[Run] = []
    ordered = sorted(events, key=lambda e: (e["pid"], e["tid"], e["ts"]))  # stable
    for (pid, thread, ts), group in groupby(ordered, key=lambda e: (e["pid"], e["tid"], e["ts"])):
        key = (int(pid), int(thread))
        frames = stacks[key]
        if frames and key in since:
            run = _run(frames, anchor_ns + since[key] * 1000, anchor_ns + int(ts) * 1000)
            if run is not None:
                out.append(run)
        for event in group:
            if event["ph"] == "B":
                frames.append(event)
            elif event["ph"] == "E" and frames:
                frames.pop()
        since[key] = int(ts)
    return out


def _run(frames: list[dict[str, Any]], t0: int, t1: int) -> Run | None:
    tid = next((_tid(f["name"]) for f in frames if f["name"].startswith("thread (")), -1)
    python = tuple(_frame_name(f) for f in frames if (f.get("args") or {}).get("filename"))
    return Run(tid, t0, t1, python) if t0 < t1 and tid > 0 and python else None


def _tid(name: str) -> int:
    """The OS thread id in py-spy's ``thread (TID)`` / ``thread (TID): NAME`` frame."""
    text = name[len("thread (") :].split(")", 1)[0]
    return int(text) if text.isdigit() else -1


@dataclass
class _Chunk:
    pid: int
    proc: subprocess.Popen
    out: Path
    spawned_ns: int


class PyStackSampler:
    """Samples Python stacks of every process of a collector's tree at ``rate_hz``."""

    def __init__(self, pid: int, rate_hz: float = DEFAULT_RATE_HZ) -> None:
        self.pid = pid
        self.rate_hz = rate_hz
        self.stacks: list[tuple[str, ...]] = []
        """Distinct Python stacks seen; :meth:`match` returns indices into it."""
        self.chunks = 0
        """py-spy runs that delivered a trace."""
        self.errors = 0
        self.last_error = ""
        self._index: dict[tuple[str, ...], int] = {}
        # per tid: runs (start, end, stack index), in start order
        self._runs: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._exe = available()
        self._tmp: Path | None = None
        """Chunk traces; a gtop killed before removing it leaves it to the next one
        (:func:`gtop.agent.tmpdirs.make`)."""
        self._live: list[_Chunk] = []
        self._seq = 0

    def start(self, collector: ThreadCollector) -> None:
        if self._exe is None:
            self.last_error = (
                f"py-spy not found beside {sys.executable} nor on PATH: no Python frames"
            )
            return
        self._tmp = tmpdirs.make("gtop-pyspy-")
        self._thread = threading.Thread(
            target=self._run, args=(collector,), name="gtop-pyspy", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for chunk in self._live:
            chunk.proc.kill()
            chunk.proc.wait()
        self._live.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _run(self, collector: ThreadCollector) -> None:
        next_start = time.monotonic()
        while not self._stop.is_set():
            if time.monotonic() >= next_start:
                for pid in sorted(set(collector.threads.values())):
                    if sum(c.pid == pid for c in self._live) < MAX_CHUNKS_PER_PID:
                        self._spawn(pid)
                # late (a loaded machine): the next chunk a whole period on, not a burst
                next_start = max(next_start + CHUNK_S, time.monotonic())
            self._reap()
            self._stop.wait(0.05)

    def _spawn(self, pid: int) -> None:
        assert self._tmp is not None and self._exe is not None
        self._seq += 1
        out = self._tmp / f"{pid}-{self._seq}.json"
        cmd = [self._exe, "record", "--pid", str(pid), "--rate", f"{self.rate_hz:g}"]
        cmd += ["--duration", str(CHUNK_S), "--format", "chrometrace", "--idle", "--threads"]
        cmd += ["--nonblocking", "--output", str(out)]
        spawned = time.monotonic_ns()
        try:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
        except OSError as exc:
            self.errors += 1
            self.last_error = str(exc)
            return
        self._live.append(_Chunk(pid, proc, out, spawned))

    def _reap(self) -> None:
        for chunk in [c for c in self._live if c.proc.poll() is not None]:
            self._live.remove(chunk)
            exited = time.monotonic_ns()
            err = chunk.proc.stderr.read().decode(errors="replace") if chunk.proc.stderr else ""
            if chunk.proc.stderr:
                chunk.proc.stderr.close()
            try:
                events = json.loads(chunk.out.read_text()) if chunk.proc.returncode == 0 else None
            except (OSError, ValueError) as exc:
                events, err = None, str(exc)
            chunk.out.unlink(missing_ok=True)
            if not events:
                if events is None:
                    self.errors += 1
                    self.last_error = err.strip()[-200:] or f"exit {chunk.proc.returncode}"
                continue
            last_ns = max(int(e["ts"]) for e in events) * 1000
            anchor = (chunk.spawned_ns + max(chunk.spawned_ns, exited - last_ns)) // 2
            self._add(runs_of(events, anchor))

    def _add(self, runs: list[Run]) -> None:
        with self._lock:
            self.chunks += 1
            touched = set()
            for run in runs:
                idx = self._index.setdefault(run.frames, len(self._index))
                if idx == len(self.stacks):
                    self.stacks.append(run.frames)
                self._runs[run.tid].append((run.t0, run.t1, idx))
                touched.add(run.tid)
            for tid in touched:
                kept = sorted(self._runs[tid])
                newest = kept[-1][1]
                self._runs[tid] = [r for r in kept if r[1] >= newest - KEEP_NS]

    def match(self, tids: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
        """For each ``(tid, [t0, t1])``: the Python stack the thread had then, or -1.

        A run joins when a sample of it lies inside the interval (its first sample, at
        the run's start) or when the interval lies inside the run's sampled span (every
        sample before, inside and after it saw the same stack); of several, the one that
        started last wins. Otherwise the interval fell between samples of different
        stacks and takes none, rather than a neighbour's.
        """
        out = np.full(len(tids), -1, dtype=np.int64)
        period_ns = int(1e9 / self.rate_hz)
        tids = tids.astype(np.int64)
        with self._lock:
            for tid in np.unique(tids).tolist():
                runs = self._runs.get(tid)
                if not runs:
                    continue
                sel = np.flatnonzero(tids == tid)
                arr = np.asarray(runs, dtype=np.int64)
                pos = np.searchsorted(arr[:, 0], t1[sel], side="right") - 1
                ok = pos >= 0
                start = arr[np.maximum(pos, 0), 0]
                # the run's last sample came at least one period before its end stamp
                span_end = arr[np.maximum(pos, 0), 1] - period_ns
                ok &= (start >= t0[sel]) | (t1[sel] <= span_end)
                out[sel[ok]] = arr[pos[ok], 2]
        return out

    def pending_ns(self) -> int:
        """How far back records should wait so that the chunk covering them has landed:
        a chunk's length plus its attach time (0.1-0.25 s here) and the reaper's beat.
        Records a late chunk misses take carried frames (:mod:`gtop.analysis.pystack_carry`).
        This is why chunks are 1 s: the wait delays every host record, and a live view
        attributes up to a second before its newest data."""
        return int((CHUNK_S + 0.4) * 1e9) if self._thread is not None else 0
