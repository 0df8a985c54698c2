"""A polling collector: one named daemon thread that samples on a jittered period."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from gtop.pipeline.hub import Hub

JITTER = 0.05
"""Each period is stretched or shrunk by up to 5% so samples do not alias with the target."""


@dataclass
class CollectorStatus:
    """What a collector reports about itself; shown by the UI and `gtop doctor`."""

    name: str
    ok: bool = True
    detail: str = ""
    polls: int = 0
    late_polls: int = 0
    """Polls that started more than one period late (the collector could not keep up)."""
    errors: int = 0
    last_error: str = ""
    unsupported: list[str] = field(default_factory=list)


class PollingCollector:
    """Calls :meth:`poll` every ``interval_s`` on a daemon thread until stopped.

    Subclasses implement :meth:`poll`, which publishes to ``self.hub``. An exception in
    ``poll`` is counted in :attr:`status` and sampling goes on.
    """

    name = "collector"

    def __init__(self, hub: Hub, interval_s: float) -> None:
        self.hub = hub
        self.interval_s = interval_s
        self.status = CollectorStatus(self.name)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"gtop-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # reported as data; the collector keeps sampling
                self.status.errors += 1
                self.status.last_error = f"{type(exc).__name__}: {exc}"
            self.status.polls += 1
            period = self.interval_s * (1 + random.uniform(-JITTER, JITTER))
            next_at += period
            now = time.monotonic()
            if now - next_at > self.interval_s:
                self.status.late_polls += 1
                next_at = now
            self._stop.wait(max(0.0, next_at - now))
