"""Host-thread test harness: a purpose-built target and a collector run over it."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from gtop.core.hub import Hub
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState

TARGET = Path(__file__).parent / "targets" / "phases.py"
FAKE_CUDA = Path(__file__).parent / "targets" / "fake_cuda.py"

_COMMON = r"""
#include <time.h>
static void nap(void) { struct timespec t = {0, 20000000}; nanosleep(&t, 0); }
static void spin(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 20000000L);
}
"""
FAKE_CUDA_LIBS = {
    "libcudart.so.13": _COMMON + r"""
int cudaStreamSynchronize(void *stream) { nap(); return 0; }
int cudaDeviceSynchronize(void) { spin(); return 0; }
""",
    "libcuda.so.1": _COMMON + r"""
int cuStreamSynchronize_ptsz(void *stream) { nap(); return 0; }
""",
}  # fmt: skip
"""Real shared libraries exporting the runtime's and the driver's synchronising calls,
for the :data:`FAKE_CUDA` target: each call sleeps (blocked) or spins for 20 ms."""


def build_fake_cuda(folder: Path, libs: dict[str, str] = FAKE_CUDA_LIBS) -> Path:
    """Compile ``libs`` (name: C source) into ``folder`` with gcc; returns ``folder``."""
    if shutil.which("gcc") is None:
        pytest.fail("gcc missing: CI must install it")
    for name, source in libs.items():
        (folder / f"{name}.c").write_text(source)
        subprocess.run(
            ["gcc", "-O1", "-shared", "-fPIC", "-o", str(folder / name), str(folder / f"{name}.c")],
            check=True,
        )  # fmt: skip
    return folder


def _die_with_parent() -> None:
    """In the child: SIGKILL it if the test process dies without cleaning up (a crash)."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def phases(*args: str, timeout: float = 20.0) -> Iterator[tuple[subprocess.Popen, dict]]:
    """Run the phases target; yield it with its READY info; kill its whole group after."""
    with target(TARGET, *args, timeout=timeout) as got:
        yield got


@contextlib.contextmanager
def target(
    script: Path, *args: str, timeout: float = 20.0, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen, dict]]:
    """Run a target script that prints ``READY {json}``; yield it with that info; kill its
    whole process group after, even on failure."""
    proc = subprocess.Popen(
        [sys.executable, str(script), *args], stdout=subprocess.PIPE, start_new_session=True,
        preexec_fn=_die_with_parent, env=env,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline().decode() if ready else ""
        if not line.startswith("READY "):
            pytest.fail(f"target did not become ready: {line!r}")
        yield proc, json.loads(line[6:])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_ns(pid: int, tid: int) -> int:
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


@dataclass
class Run:
    """What a collector published over a window, plus schedstat truth for that window."""

    t0: int
    t1: int
    intervals: np.ndarray
    samples: np.ndarray
    stacks: dict[int, dict] = field(default_factory=dict)
    truth_on: dict[int, int] = field(default_factory=dict)
    entities: list = field(default_factory=list)

    def overlap(
        self, tid: int, state: ThreadState | None = None, reason: BlockReason | None = None
    ) -> int:
        """Nanoseconds of ``tid`` in ``state`` (any state when None) inside the window,
        only those with ``reason`` when given."""
        rows = self.intervals[self.intervals["tid"] == tid]
        if state is not None:
            rows = rows[rows["state"] == state]
        if reason is not None:
            rows = rows[rows["reason"] == reason]
        a = np.maximum(rows["t_ns"], self.t0)
        b = np.minimum(rows["end_ns"], self.t1)
        return int(np.clip(b - a, 0, None).sum())

    def share(self, tid: int, state: ThreadState, reason: BlockReason) -> float:
        """Fraction of the window that ``tid`` spent in ``state`` for ``reason``."""
        return self.overlap(tid, state, reason) / (self.t1 - self.t0)

    def frames(self, sid: int) -> list[str]:
        return self.stacks[sid]["frames"] if sid in self.stacks else []


def collect(make, pid: int, tids: list[int], window_s: float = 3.0, warmup_s: float = 1.0) -> Run:
    """Run the started collector ``make(hub, pid)``; measure ``window_s`` after a warm-up."""
    hub = Hub()
    sub = hub.subscribe()
    col = make(hub, pid)  # started
    try:
        time.sleep(warmup_s)
        t0 = time.monotonic_ns()
        s0 = {t: run_ns(pid, t) for t in tids}
        time.sleep(window_s)
        t1 = time.monotonic_ns()
        s1 = {t: run_ns(pid, t) for t in tids}
        time.sleep(0.3)
    finally:
        col.stop()
    upd = sub.poll()
    empty = {THREAD_STATE.name: THREAD_STATE.empty(), CPU_SAMPLE.name: CPU_SAMPLE.empty()}
    batches = {**empty, **upd.batches}
    stacks = {int(e.key): e.value for e in upd.entities if e.kind == "stack"}
    run = Run(t0, t1, batches[THREAD_STATE.name], batches[CPU_SAMPLE.name], stacks)
    run.truth_on = {t: s1[t] - s0[t] for t in tids}
    run.entities = upd.entities
    run.collector = col
    return run
