"""The streaming py-spy sampler against a real Python process: runs per thread, joined to
intervals by time, py-spy found beside the interpreter, nothing left in the temp dir."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from gtop.collectors.threads import pystacks

TARGET = """
import threading, time
def sleeper():
    while True:
        time.sleep(0.05)
def spin():
    while True:
        sum(range(1000))
t = threading.Thread(target=sleeper, daemon=True)
t.start()
print(threading.get_native_id(), t.native_id, flush=True)
spin()
"""


class Tree:
    """What the sampler reads of a thread collector: the watched threads' processes."""

    def __init__(self, pid: int) -> None:
        self.threads = {pid: pid}


@pytest.fixture
def target():
    proc = subprocess.Popen([sys.executable, "-c", TARGET], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        main_tid, sleeper_tid = map(int, proc.stdout.readline().split())
        yield proc.pid, main_tid, sleeper_tid
    finally:
        proc.kill()
        proc.wait()


def test_py_spy_is_found_beside_the_interpreter_without_path(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "")
    found = pystacks.available()
    assert found is not None and Path(found).is_file()


def test_threads_stacks_stream_in_and_join_by_time(target) -> None:
    pid, main_tid, sleeper_tid = target
    sampler = pystacks.PyStackSampler(pid)
    t_start = time.monotonic_ns()
    sampler.start(Tree(pid))
    try:
        deadline = time.monotonic() + 30
        while sampler.chunks < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        t_end = time.monotonic_ns()
    finally:
        sampler.stop()
    assert sampler.chunks >= 2, sampler.last_error
    runs = {tid: sampler._runs[tid] for tid in (main_tid, sleeper_tid)}
    for tid, name in ((main_tid, "spin (<string>)"), (sleeper_tid, "sleeper (<string>)")):
        assert runs[tid], f"no runs for {name}"
        assert all(name in sampler.stacks[i] for _, _, i in runs[tid])
        first, last = runs[tid][0][0], max(r[1] for r in runs[tid])
        assert t_start < first < last < t_end  # placed on this clock, inside the run
    # intervals of each thread, one per 50 ms across the sampled span, take its own stack
    lo = max(r[0] for r in (runs[main_tid][0], runs[sleeper_tid][0]))
    hi = min(max(r[1] for r in runs[t]) for t in runs) - 20_000_000
    t0 = np.arange(lo, hi, 50_000_000, dtype=np.int64)
    for tid, name in ((main_tid, "spin (<string>)"), (sleeper_tid, "sleeper (<string>)")):
        got = sampler.match(np.full(len(t0), tid), t0, t0 + 20_000_000)
        # chunks overlap, but on a loaded machine a late attach can leave a short gap
        assert (got >= 0).mean() > 0.75, ((got >= 0).mean(), sampler.chunks, sampler.errors)
        assert all(name in sampler.stacks[i] for i in got[got >= 0])
    assert (sampler.match(np.array([12345678]), t0[:1], t0[:1] + 1) == -1).all()


def test_stop_leaves_no_temp_files(target) -> None:
    pid, _, _ = target
    before = set(Path(tempfile.gettempdir()).glob("gtop-pyspy-*"))
    sampler = pystacks.PyStackSampler(pid)
    sampler.start(Tree(pid))
    threading.Event().wait(0.5)  # a chunk is running
    sampler.stop()
    assert set(Path(tempfile.gettempdir()).glob("gtop-pyspy-*")) == before
