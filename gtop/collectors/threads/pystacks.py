"""Python frames for the host-thread tiers: sampled Python stacks, each with its thread's
state, joined to kernel/native intervals by thread id, time and state.

CPython has no frame pointers, so BPF and perf user stacks stop at the interpreter loop.
An out-of-process sampler reads the interpreter's memory and reports each OS thread's
Python stack with whether the thread was running; :class:`PyStackSampler` keeps the recent
samples per thread and state, and :meth:`PyStackSampler.match` gives an interval a stack
sampled *inside* it, in the same state. Two samplers feed it, chosen by :func:`sampler`:
Austin streaming at ``--rate`` (:mod:`gtop.collectors.threads.austin`, the default), else
``py-spy dump`` a few times a second (:mod:`gtop.collectors.threads.pyspy_dump`).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import threading
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gtop.core.pyframe import DEFAULT_RATE_HZ

if TYPE_CHECKING:
    from gtop.collectors.threads.tier import ThreadCollector

KEEP_NS = 30_000_000_000
"""How long sampled Python stacks are kept for matching against intervals."""


def find(name: str) -> str | None:
    """A sampler's binary: beside this interpreter (its venv's ``bin``, or the scripts
    folder pip installed into), else on ``PATH`` (sudo drops a venv's ``bin`` from it)."""
    scripts = Path(sysconfig.get_path("scripts"))
    for path in (Path(sys.executable).parent / name, scripts / name):
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return shutil.which(name)


def available() -> tuple[str, str] | None:
    """``(sampler, binary)`` of the sampler gtop uses here, or None when neither is found."""
    for name in ("austin", "py-spy"):
        path = find(name)
        if path is not None:
            return name, path
    return None


MISSING = "Austin or py-spy beside this Python or on PATH (pip install austin-dist py-spy)"


class PyStackSampler:
    """The samples of every process of a collector's tree, per thread and state.

    Subclasses sample (:meth:`start`, :meth:`stop`) and call :meth:`add` with each stack.
    """

    name = "none"
    sample_join_ns = 25_000_000
    """An on-CPU sample takes a Python stack sampled at most this far from it."""

    def __init__(self, pid: int, rate_hz: float = DEFAULT_RATE_HZ, idle: bool = True) -> None:
        self.pid = pid
        self.rate_hz = rate_hz
        self.idle = idle
        """Keep samples of threads that were not running (``--no-idle``: drop them, as
        py-spy without ``--idle``: blocked time then has no Python frames)."""
        self.stacks: list[tuple[str, ...]] = []
        """Distinct Python stacks seen; :meth:`match` returns indices into it."""
        self.samples = 0
        """Thread samples taken (with or without Python frames)."""
        self.python_samples = 0
        """Thread samples that had Python frames."""
        self.errors = 0
        self.last_error = ""
        self._index: dict[tuple[str, ...], int] = {}
        # per (tid, running?): sample windows [lo, hi], stack indices and the id of each
        # stack's outermost function, in time order
        self._times: dict[tuple[int, bool], list[tuple[int, int]]] = defaultdict(list)
        self._ids: dict[tuple[int, bool], list[int]] = defaultdict(list)
        self._roots: dict[tuple[int, bool], list[int]] = defaultdict(list)
        self._root_ids: dict[str, int] = {}
        self._root_counts: dict[int, Counter[int]] = defaultdict(Counter)
        self._lock = threading.Lock()

    def start(self, collector: ThreadCollector) -> None:
        """Start sampling the processes of ``collector.threads`` (followed as it changes)."""

    def stop(self) -> None:
        """Stop sampling now; what was sampled stays matchable."""

    def error(self, message: str) -> None:
        self.errors += 1
        self.last_error = message.strip()[-200:]

    def add(self, tid: int, running: bool, lo: int, hi: int, frames: tuple[str, ...]) -> None:
        """One thread sample read somewhere in ``[lo, hi]`` (CLOCK_MONOTONIC ns), with its
        frames outermost first (empty: the thread had no Python frames)."""
        with self._lock:
            self.samples += 1
            if not frames or not (running or self.idle):
                return
            self.python_samples += 1
            idx = self._index.setdefault(frames, len(self._index))
            if idx == len(self.stacks):
                self.stacks.append(frames)
            root = self._root_ids.setdefault(_function(frames[0]), len(self._root_ids))
            self._root_counts[tid][root] += 1
            key = (tid, running)
            times = self._times[key]
            times.append((lo, hi))
            self._ids[key].append(idx)
            self._roots[key].append(root)
            if times[0][1] < hi - KEEP_NS:
                del times[0], self._ids[key][0], self._roots[key][0]

    def match(
        self, tids: np.ndarray, t0: np.ndarray, t1: np.ndarray, running: np.ndarray
    ) -> np.ndarray:
        """For each ``(tid, [t0, t1], running)``: a Python stack sampled in it, or -1.

        A sample joins only when the sampler saw the thread in the same condition
        (``running``: on CPU or runnable, versus blocked), so a wait never borrows the
        frames of the work beside it, and when its whole read window lies inside
        ``[t0, t1]``; of several, the middle one (the farthest from either edge). A
        running interval that holds no whole window (a slice between preemptions, an
        on-CPU sample's instant) takes the nearest running sample up to
        :attr:`sample_join_ns` away: the thread's Python stack does not change while it
        waits for a CPU, and blocked time on either side has samples of its own.

        Samples of a whole stack (one that starts at the thread's usual outermost
        function) come first, inside the interval or near it, before a torn one inside:
        the sampler reads a running thread's frames without stopping it, and a generator
        that yields meanwhile leaves a stack cut to its own frame (``<genexpr>`` alone,
        no caller; or Austin's ``INVALID``), which would otherwise name a long on-CPU
        interval by one torn read.
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
                ids = np.asarray(self._ids[(tid, bool(run))])
                usual = self._root_counts[tid].most_common(1)[0][0]
                whole = np.asarray(self._roots[(tid, bool(run))]) == usual
                first = np.searchsorted(tarr[:, 0], t0[sel], side="left")
                last = np.searchsorted(tarr[:, 1], t1[sel], side="right") - 1
                found = np.full(len(sel), -1, dtype=np.int64)
                for kept in (whole, np.ones_like(whole)):
                    need = found < 0
                    found[need] = _middle(ids, kept, first[need], last[need])
                    if run:
                        need = np.flatnonzero(found < 0)
                        a, b = t0[sel[need]], t1[sel[need]]
                        found[need] = _nearest(tarr[kept], ids[kept], a, b, self.sample_join_ns)
                out[sel] = found
        return out

    def pending_ns(self) -> int:
        """How far back records should wait so that samples covering them have landed."""
        return 0

    def summary(self) -> dict[str, object]:
        """What the report says of the sampler: its name, rate, samples and their share
        with Python frames."""
        share = self.python_samples / self.samples if self.samples else 0.0
        return {
            "py_sampler": self.name,
            "py_rate_hz": self.rate_hz,
            "py_idle": self.idle,
            "py_samples": self.samples,
            "py_framed_share": round(share, 4),
        }


def sampler(pid: int, rate_hz: float = DEFAULT_RATE_HZ, idle: bool = True) -> PyStackSampler:
    """The best sampler found here for ``pid``'s tree: Austin, else ``py-spy dump``, else
    one that samples nothing and says why (:attr:`PyStackSampler.last_error`)."""
    from gtop.collectors.threads.austin import AustinSampler
    from gtop.collectors.threads.pyspy_dump import PySpyDumpSampler

    found = available()
    if found is None:
        none = PyStackSampler(pid, rate_hz, idle)
        none.error(f"{MISSING}: no Python frames")
        return none
    name, path = found
    cls = AustinSampler if name == "austin" else PySpyDumpSampler
    return cls(pid, rate_hz, path, idle)


def _function(frame: str) -> str:
    """A frame's function and file without its line: ``f (a.py:12)`` -> ``f (a.py``."""
    return frame.rsplit(":", 1)[0]


def _middle(ids: np.ndarray, kept: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """For each range ``[first, last]`` of samples: the id of the middle one of those
    ``kept``, or -1 where none is."""
    at = np.flatnonzero(kept)
    lo = np.searchsorted(at, first, side="left")
    n = np.searchsorted(at, last, side="right") - lo
    has = n > 0
    out = np.full(len(first), -1, dtype=np.int64)
    out[has] = ids[at[lo[has] + (n[has] - 1) // 2]]
    return out


def _nearest(
    windows: np.ndarray, ids: np.ndarray, t0: np.ndarray, t1: np.ndarray, near: int
) -> np.ndarray:
    """For each ``[t0, t1]``: the id of the window (``[lo, hi]`` rows, in time order)
    nearest to it, when at most ``near`` away (0 when they overlap); else -1."""
    if not len(windows):
        return np.full(len(t0), -1, dtype=np.int64)
    centre = (windows[:, 0] + windows[:, 1]) // 2
    pos = np.searchsorted(centre, (t0 + t1) // 2)
    best = np.full(len(t0), -1, dtype=np.int64)
    gap_best = np.full(len(t0), near + 1, dtype=np.int64)
    for cand in (pos - 1, pos):
        valid = (cand >= 0) & (cand < len(windows))
        c = np.clip(cand, 0, len(windows) - 1)
        gap = np.maximum(np.maximum(windows[c, 0] - t1, t0 - windows[c, 1]), 0)
        better = valid & (gap < gap_best)
        best[better], gap_best[better] = ids[c[better]], gap[better]
    return best
