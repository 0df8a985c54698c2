"""What every live collector shares: the :class:`Collector` protocol the live session
drives, and :class:`Periodic`, the one sampling loop (a named daemon thread on a jittered
period, errors counted as data)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gtop.core.hub import Hub
from gtop.core.status import Status

if TYPE_CHECKING:
    from gtop.collectors.agent.link import AgentLink

JITTER = 0.05
"""Each period is stretched or shrunk by up to 5% so samples do not alias with the target."""


class Collector(Protocol):
    """A live source of records: started once, stopped once, asked for its health."""

    name: str

    def start(self) -> None:
        """Begin collecting on the collector's own thread(s); never blocks for long."""
        ...

    def stop(self) -> None:
        """Stop collecting and flush what is pending; idempotent."""
        ...

    def statuses(self) -> list[Status]:
        """One status per thing it watches (most collectors: one)."""
        ...


@dataclass(frozen=True)
class SessionSetup:
    """What a live session gives the collectors it opens."""

    hub: Hub
    interval_s: float
    pid: int | None
    """The focused target (followed with its descendants), or None for the whole machine."""
    host_tier: str
    """How the target's threads are traced: ``auto``, ``bpf``, ``perf``, ``proc`` or ``off``."""
    watched_pids: Callable[[], set[int]]
    """The processes to sample now: the target's family and every process on a GPU."""
    py_rate_hz: float = 100.0
    """Python stack samples per second per thread (``--rate``)."""
    py_idle: bool = True
    """Keep Python samples of threads that were not running (``--idle``, the default)."""
    agent: AgentLink | None = None
    """The session's agent link, for the collectors that open with it (``opens = "agent"``)."""
    gpu_pids: Callable[[], Iterable[int]] | None = None
    """The processes on a GPU now (NVML's), or None without NVML."""


class SessionCollector(Collector, Protocol):
    """A collector class a live session opens by itself (declared as a module's ``COLLECTOR``:
    :func:`gtop.collectors.session_collectors`)."""

    @classmethod
    def for_session(cls, setup: SessionSetup) -> Collector | None:
        """The collector for this session, or None when it has nothing to watch there."""
        ...


class Periodic:
    """Calls ``step(final)`` every ``period_s`` on a daemon thread named ``gtop-<name>``.

    ``step`` gets ``final=False`` while running; with ``final_step`` it is called once more
    with ``final=True`` after :meth:`stop` (to flush). An exception in ``step`` is counted
    in ``status`` and the loop goes on; a call that starts more than one period late is
    counted in ``status.late_polls``.
    """

    def __init__(
        self,
        name: str,
        period_s: float,
        step: Callable[[bool], None],
        status: Status,
        *,
        final_step: bool = False,
    ) -> None:
        self.name = name
        self.period_s = period_s
        self.step = step
        self.status = status
        self.final_step = final_step
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"gtop-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stop.is_set()

    @property
    def alive(self) -> bool:
        """Its thread still runs (after :meth:`stop`: a step outlived the timeout)."""
        return self._thread is not None and self._thread.is_alive()

    def _call(self, final: bool) -> None:
        try:
            self.step(final)
        except Exception as exc:  # carried as data; the loop keeps going
            self.status.count_error(type(exc).__name__, f"{type(exc).__name__}: {exc}")
        self.status.polls += 1

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self._call(False)
            next_at += self.period_s * (1 + random.uniform(-JITTER, JITTER))
            now = time.monotonic()
            if now - next_at > self.period_s:
                self.status.late_polls += 1
                next_at = now
            self._stop.wait(max(0.0, next_at - now))
        if self.final_step:
            self._call(True)


class PollingCollector:
    """A :class:`Collector` that calls :meth:`poll` every ``interval_s``.

    Subclasses implement :meth:`poll`, which publishes to ``self.hub``.
    """

    name = "collector"
    final_poll = False
    """Poll once more after :meth:`stop` (what changed since the last poll is kept)."""

    def __init__(self, hub: Hub, interval_s: float) -> None:
        self.hub = hub
        self.interval_s = interval_s
        self.status = Status(self.name)
        self._loop = Periodic(
            self.name, interval_s, lambda final: self.poll(), self.status,
            final_step=self.final_poll,
        )  # fmt: skip

    def poll(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._loop.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._loop.stop(timeout)

    def statuses(self) -> list[Status]:
        return [self.status]
