"""A host-thread tier's stop with a timeout: a last poll that outlives it is abandoned
(its source stays open for its thread), said in the status; without one, stop waits."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

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
