"""A host-thread tier's stop with a timeout: a last poll that outlives it is abandoned
(its source stays open for its thread), said in the status; without one, stop waits. The
BPF tier's GPU-wait probes attach on a thread of their own: a slow attach holds up
neither a poll nor the stop beyond its timeout."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from host_harness import FAKE_CUDA, build_fake_cuda, target

from gtop.collectors.threads.bpf import BpfThreadCollector
from gtop.collectors.threads.proc import ProcThreadCollector
from gtop.collectors.threads.tier import ABANDONED
from gtop.collectors.threads.tiers import HostThreads
from gtop.core.hub import Hub


class StuckPoll(ProcThreadCollector):
    """The proc tier, its polls held at ``gate`` once stop is asked (a poll that reads
    symbol tables or attaches uprobes for seconds)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.closed = False

    def _poll(self, final: bool) -> None:
        if not self._loop.running:
            self.gate.wait(30)
        super()._poll(final)

    def _close(self) -> None:
        self.closed = True
        super()._close()


def _target() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


def test_a_last_poll_past_the_timeout_is_abandoned() -> None:
    target = _target()
    col = StuckPoll(Hub(), target.pid, python_stacks=False)
    try:
        col.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        col.stop(timeout=0.3)
        assert time.monotonic() - t0 < 1.5
        assert col.status.errors == {ABANDONED: 1}
        assert "did not finish within 0.3 s" in col.status.last_error
        assert not col.closed  # its thread still polls: the source stays open
        host = HostThreads(Hub(), target.pid)
        host.active = col
        assert host.abandoned() == f"host threads (proc tier): {col.status.last_error}"
    finally:
        col.gate.set()
        target.kill()
        target.wait()


def test_without_a_timeout_stop_waits_for_the_last_poll() -> None:
    target = _target()
    col = StuckPoll(Hub(), target.pid, python_stacks=False)
    try:
        col.start()
        time.sleep(0.3)
        threading.Timer(0.5, col.gate.set).start()
        col.stop()
        assert col.closed and not col.status.errors
        host = HostThreads(Hub(), target.pid)
        host.active = col
        assert host.abandoned() is None
    finally:
        col.gate.set()
        target.kill()
        target.wait()


class HeldAttach(BpfThreadCollector):
    """The BPF tier, each GPU-wait probe's attach held at ``gate`` (an attach that waits
    for the kernel's system-wide uprobe lock, as on the H200 with four torch targets)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()

    def _attach_wait(self, path: str, offset: int) -> None:
        self.gate.wait(30)
        super()._attach_wait(path, offset)


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory) -> Path:
    return build_fake_cuda(tmp_path_factory.mktemp("fakecuda"))


def test_a_held_probe_attach_holds_up_neither_the_polls_nor_the_stop(fake_cuda) -> None:
    with target(FAKE_CUDA, str(fake_cuda)) as (_proc, info):
        col = HeldAttach(Hub(), info["pid"], python_stacks=False)
        col.start()
        try:
            time.sleep(0.3)
            polls = col.status.polls
            time.sleep(0.5)  # the first attach is held all this time
            assert col.status.polls >= polls + 3, (polls, col.status)
            assert not col.status.counters.get("gpu_wait_probes")
            t0 = time.monotonic()
            col.stop(timeout=0.3)
            assert time.monotonic() - t0 < 0.3
            assert not col.status.errors, col.status
        finally:
            col.gate.set()


def test_a_child_holds_the_probes_and_lets_them_go_at_the_stop(fake_cuda) -> None:
    """The probes are the holder child's (its perf events; gtop's own stay as they were
    before the first attach); after the stop it exits by itself, removing them."""
    with target(FAKE_CUDA, str(fake_cuda)) as (_proc, info):
        col = HeldAttach(Hub(), info["pid"], python_stacks=False)
        col.start()
        time.sleep(0.3)
        mine = _perf_events(os.getpid())  # the tier's own, the first attach held
        col.gate.set()
        deadline = time.monotonic() + 10
        while col.status.counters.get("gpu_wait_probes", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        holder = col._holder.proc
        after, its = _perf_events(os.getpid()), _perf_events(holder.pid)
        col.stop(timeout=2.0)
        # the fake runtime and driver export three probed calls: an entry and a return each
        assert col.status.counters.get("gpu_wait_probes") == 3, col.status
        assert (after, its) == (mine, 6)
        assert holder.wait(10) == 0
    assert not col.status.errors, col.status


def _perf_events(pid: int) -> int:
    """How many perf event descriptors process ``pid`` holds open."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
    return count
