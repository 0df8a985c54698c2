"""Host view of processes: CPU%, RSS, threads, I/O (psutil) and identity (/proc).

Which processes to watch is decided by the caller (``pids_fn``): the focused target and
its descendants, plus every process NVML sees on a GPU. Each new or changed process is
published once as an entity of kind ``"process"``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import psutil

from gtop.collectors.base import PollingCollector, SessionSetup
from gtop.collectors.procenv import dist_env
from gtop.core import layouts
from gtop.core.hub import Entity, Hub


class TargetGone(LookupError):
    """The pid does not exist (message is one line)."""


def ns_pids(pid: int) -> list[int]:
    """The pid as seen from each nested PID namespace, outermost first (``NSpid``).

    A process in a container shows ``[host_pid, container_pid]`` when read from the host.
    """
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return [pid]


def describe(proc: psutil.Process) -> dict[str, Any]:
    """Identity of a process (an entity value); fields that cannot be read are None.
    ``dist``: its torch.distributed rank variables (:mod:`gtop.collectors.procenv`)."""
    info: dict[str, Any] = {"pid": proc.pid}
    with proc.oneshot():
        for key, getter in (
            ("name", proc.name),
            ("ppid", proc.ppid),
            ("user", proc.username),
            ("create_time", proc.create_time),
            ("cmdline", proc.cmdline),
        ):
            try:
                info[key] = getter()
            except (psutil.AccessDenied, psutil.ZombieProcess, KeyError):
                info[key] = None
    nested = ns_pids(proc.pid)
    info["ns_pid"] = nested[-1] if len(nested) > 1 else None
    info["dist"] = dist_env(proc.pid)
    return info


def check_pid(pid: int) -> psutil.Process:
    """The process ``pid``.

    Raises:
        TargetGone: no such process.
    """
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        raise TargetGone(f"no process with pid {pid}") from None
    except (ValueError, OverflowError):
        raise TargetGone(f"{pid} is not a valid pid") from None


def family(pid: int) -> list[int]:
    """``pid`` and all its live descendants (DataLoader workers are processes)."""
    try:
        proc = psutil.Process(pid)
        return [pid, *(child.pid for child in proc.children(recursive=True))]
    except psutil.Error:
        return []


class HostCollector(PollingCollector):
    """Samples the processes named by ``pids_fn`` each period; publishes ``proc_host``.

    A watched process that exits is published once as a ``"process"`` entity with
    ``exited`` set, and dropped from sampling; its history stays. It counts as exited
    when it is a zombie (exited, not yet reaped: its parent may never reap it), and when
    it leaves ``pids_fn()`` because it is gone (a reaped child vanishes from its parent's
    descendants); one that leaves ``pids_fn()`` alive is just no longer sampled.
    """

    name = "host"
    final_poll = True  # a launched command's exit ends the session before a next poll

    def __init__(self, hub: Hub, interval_s: float, pids_fn: Callable[[], Iterable[int]]) -> None:
        super().__init__(hub, interval_s)
        self._pids_fn = pids_fn
        self._procs: dict[int, psutil.Process] = {}
        self._described: dict[int, dict[str, Any]] = {}
        self._io_prev: dict[int, tuple[int, int, int]] = {}
        self._gone: dict[int, float | None] = {}
        """Pids published as exited, with their create time: a zombie stays in its
        parent's children until reaped, and a reused pid is a new process."""

    @classmethod
    def for_session(cls, setup: SessionSetup) -> HostCollector:
        return cls(setup.hub, setup.interval_s, setup.watched_pids)

    def poll(self) -> None:
        t = time.monotonic_ns()
        wanted = set(self._pids_fn())
        for pid in set(self._gone) - wanted:
            del self._gone[pid]  # reaped: a process that reuses the pid is a new one
        for pid in set(self._procs) - wanted:
            proc = self._procs.pop(pid)
            if not _alive(proc):
                self._exited(pid, t)
        rows = layouts.PROC_HOST.empty(len(wanted))
        n = 0
        for pid in sorted(wanted):
            proc = self._process(pid, t)
            if proc is None:
                continue
            try:
                with proc.oneshot():
                    if proc.status() == psutil.STATUS_ZOMBIE:
                        raise psutil.ZombieProcess(pid)
                    cpu = proc.cpu_percent(None)
                    rss = proc.memory_info().rss
                    threads = proc.num_threads()
                    io = self._io_rates(proc, t)
            except psutil.NoSuchProcess:
                self._exited(pid, t)
                continue
            except psutil.AccessDenied:
                continue
            row = rows[n]
            row["t_ns"], row["pid"] = t, pid
            row["cpu_pct"], row["rss"], row["threads"] = cpu, rss, threads
            if io is not None:
                row["read_bps"], row["write_bps"] = io
            n += 1
        if n:
            self.hub.publish("proc_host", rows[:n])

    def _process(self, pid: int, t: int) -> psutil.Process | None:
        proc = self._procs.get(pid)
        if proc is not None:
            return proc
        try:
            proc = psutil.Process(pid)
            if pid in self._gone:
                if proc.create_time() == self._gone[pid] or not _alive(proc):
                    return None  # the exited one, still unreaped
                del self._gone[pid]  # the pid was reused
            zombie = proc.status() == psutil.STATUS_ZOMBIE
            proc.cpu_percent(None)  # primes the CPU counter; the first reading is 0
            info = describe(proc)
        except psutil.NoSuchProcess:
            self._exited(pid, t)
            return None
        except psutil.AccessDenied:
            return None
        if zombie:  # first seen after it exited: publish it once, as exited
            self._described[pid] = info
            self._exited(pid, t)
            return None
        self._procs[pid] = proc
        if self._described.get(pid) != info:
            self._described[pid] = info
            self.hub.publish_entity(Entity("process", str(pid), t, info))
        return proc

    def _exited(self, pid: int, t: int) -> None:
        self._procs.pop(pid, None)
        self._io_prev.pop(pid, None)
        info = self._described.get(pid)
        if info is not None:
            self._gone[pid] = info.get("create_time")
        if info is not None and not info.get("exited"):
            info = {**info, "exited": True, "exit_t_ns": t}
            self._described[pid] = info
            self.hub.publish_entity(Entity("process", str(pid), t, info))

    def _io_rates(self, proc: psutil.Process, t: int) -> tuple[float, float] | None:
        try:
            io = proc.io_counters()
        except (psutil.AccessDenied, AttributeError):
            return None
        prev = self._io_prev.get(proc.pid)
        self._io_prev[proc.pid] = (t, io.read_bytes, io.write_bytes)
        if prev is None or t <= prev[0]:
            return None
        dt = (t - prev[0]) / 1e9
        return (io.read_bytes - prev[1]) / dt, (io.write_bytes - prev[2]) / dt


def _alive(proc: psutil.Process) -> bool:
    """Whether ``proc`` (the same process, not a reused pid) runs: not gone, not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


COLLECTOR = HostCollector
"""Opened by every live session (:func:`gtop.collectors.session_collectors`)."""
