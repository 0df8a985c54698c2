"""perf tier: per-thread switch records and switch-out callchains from ``perf_event_open``.

For every thread of the target, one ``sched:sched_switch`` tracepoint event per CPU with
``inherit`` (so new threads and child processes are followed by the kernel) and
``context_switch`` (PERF_RECORD_SWITCH at every switch in and out, flagged when the
thread was preempted). The tracepoint fires in the thread's own context as it leaves the
CPU, so its callchain is where the thread blocked; the blocked reason is read from those
kernel frames. Without a wakeup event, run-queue time after a wakeup counts as blocked;
preempted threads count as runnable. Needs CAP_PERFMON (or perf_event_paranoid <= 1) and
tracefs.
"""

from __future__ import annotations

import os
import struct
import subprocess
import time
from dataclasses import dataclass

from gtop.collectors import blockreason, perf_events, proctree
from gtop.collectors.perf_events import (
    CONTEXT_KERNEL,
    CONTEXT_USER,
    MISC_SWITCH_OUT,
    MISC_SWITCH_OUT_PREEMPT,
    RECORD_LOST,
    RECORD_SAMPLE,
    RECORD_SWITCH,
    Attr,
    PerfRing,
)  # fmt: skip
from gtop.collectors.symbols import Symbolizer
from gtop.collectors.threads_base import ThreadCollector
from gtop.pipeline.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState

_SAMPLE_TYPE = perf_events.SAMPLE_TID | perf_events.SAMPLE_TIME | perf_events.SAMPLE_CPU


@dataclass
class _Thread:
    pid: int
    on: bool
    since: int  # emitted up to here; the current state began at or before it
    state: int = ThreadState.ON_CPU
    reason: int = BlockReason.NONE
    stack: int = -1
    next_stack: tuple[int, int] = (-1, BlockReason.OTHER)  # from the switch-out sample


def ensure_tracefs() -> None:
    """Mount tracefs at /sys/kernel/tracing when nothing is mounted there (root only)."""
    if not os.path.exists("/sys/kernel/tracing/events") and not os.path.exists(
        "/sys/kernel/debug/tracing/events"
    ):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)


class PerfThreadCollector(ThreadCollector):
    """The perf tier."""

    tier = "perf"

    def __init__(self, hub, pid: int, *, sample_hz: int = 99, **kw) -> None:
        super().__init__(hub, pid, **kw)
        self.ncpu = os.cpu_count() or 1
        self.sample_hz = sample_hz
        self._fds: list[int] = []
        self._rings: list[PerfRing] = []  # switch records and switch-out callchains, per CPU
        self._sample_rings: list[PerfRing] = []  # cpu-clock samples, per CPU
        self._opened: set[int] = set()
        self._threads: dict[int, _Thread] = {}
        self._syms: Symbolizer | None = None
        self._stack_cache: dict[tuple, tuple[int, int]] = {}
        self._rows: list[tuple] = []

    def _open(self) -> None:
        ensure_tracefs()
        self._config = perf_events.tracepoint_id("sched", "sched_switch")
        self._syms = Symbolizer()
        try:
            self._open_threads(self.threads)
        except BaseException:
            self._close()
            raise
        if not self._opened:
            raise ProcessLookupError(f"no thread of {self.pid} could be opened")

    def _open_threads(self, table: dict[int, int]) -> None:
        now = time.monotonic_ns()
        flags = (
            perf_events.FLAG_INHERIT | perf_events.FLAG_CONTEXT_SWITCH
            | perf_events.FLAG_SAMPLE_ID_ALL | perf_events.FLAG_USE_CLOCKID
        )  # fmt: skip
        for tid, pid in table.items():
            if tid in self._opened or tid in self._threads:
                continue  # already followed (inherited events cover new threads)
            attr = Attr(
                type=perf_events.TYPE_TRACEPOINT, config=self._config, sample_period=1,
                sample_type=_SAMPLE_TYPE | perf_events.SAMPLE_CALLCHAIN, flags=flags,
                clockid=perf_events.CLOCK_MONOTONIC,
            )  # fmt: skip
            clock = perf_events.cpu_clock(self.sample_hz)
            clock.sample_type = attr.sample_type
            clock.flags |= perf_events.FLAG_INHERIT | perf_events.FLAG_USE_CLOCKID
            clock.clockid = perf_events.CLOCK_MONOTONIC
            events = [(attr, self._rings)] + (
                [(clock, self._sample_rings)] if self.sample_hz else []
            )
            try:
                for event, rings in events:
                    fds = [perf_events.open_event(event, tid, cpu) for cpu in range(self.ncpu)]
                    self._fds.extend(fds)
                    for cpu, fd in enumerate(fds):
                        if len(rings) <= cpu:
                            rings.append(PerfRing(fd))
                        else:
                            rings[cpu].redirect(fd)
            except ProcessLookupError:
                continue  # exited meanwhile
            self._opened.add(tid)
            self._threads[tid] = self._seed(tid, pid, now)

    def _seed(self, tid: int, pid: int, now: int) -> _Thread:
        """The state of a thread first seen now, from /proc (blocked ones never switch)."""
        blocked = proctree.blocked_state(pid, tid)
        th = _Thread(pid, on=blocked is None, since=now)
        if blocked is not None:
            syscall, kstack = blocked
            th.state, th.reason = ThreadState.BLOCKED, blockreason.classify(syscall, kernel=kstack)
            th.stack = self.base_stack((), kstack)
        return th

    def _tree_changed(self, table: dict[int, int]) -> None:
        if self._syms is not None:
            self._open_threads({t: p for t, p in table.items() if t not in self._threads})

    # --- reading -------------------------------------------------------------------------
    def _poll(self, final: bool) -> None:
        samples = [
            (cpu, r)
            for cpu, ring in enumerate(self._sample_rings)
            for r in self._parse(ring.read())
        ]
        out = CPU_SAMPLE.empty(len(samples))
        for i, (cpu, (t, _kind, tid, pid, _misc, stack)) in enumerate(samples):
            out[i] = (t, pid, tid, cpu, stack[0])  # t_ns, pid, tid, cpu, stack_id
        self.submit(CPU_SAMPLE.name, out)
        records = []
        for ring in self._rings:
            records.extend(self._parse(ring.read()))
        records.sort(key=lambda r: r[0])
        for t, kind, tid, pid, misc, stack in records:
            th = self._threads.get(tid)
            if th is None:  # a thread created after open, followed through inherit
                th = self._threads[tid] = _Thread(pid, on=True, since=t)
            if kind == RECORD_SAMPLE:
                th.next_stack = stack
            elif misc & MISC_SWITCH_OUT:
                self._emit(tid, th, t)
                th.on = False
                if misc & MISC_SWITCH_OUT_PREEMPT:
                    th.state, th.reason = ThreadState.RUNNABLE, BlockReason.NONE
                    th.stack = th.next_stack[0]
                else:
                    th.state = ThreadState.BLOCKED
                    th.stack, th.reason = th.next_stack
            else:
                self._emit(tid, th, t)
                th.on, th.state, th.reason, th.stack = True, ThreadState.ON_CPU, 0, -1
        now = time.monotonic_ns()
        for tid, th in list(self._threads.items()):
            if tid in self.threads or final:
                self._emit(tid, th, now)  # in progress, up to now
            else:
                del self._threads[tid]  # exited
        rows = THREAD_STATE.empty(len(self._rows))
        for i, name in enumerate(("t_ns", "end_ns", "pid", "tid", "state", "reason", "stack_id")):
            rows[name] = [r[i] for r in self._rows]
        self._rows = []
        self.submit(THREAD_STATE.name, rows)

    def _emit(self, tid: int, th: _Thread, t: int) -> None:
        if t > th.since:
            self._rows.append((th.since, t, th.pid, tid, th.state, th.reason, th.stack))
            th.since = t

    def _parse(self, data: bytes):
        """(time, kind, tid, pid, misc, (stack, reason)) per sample or switch record."""
        off = 0
        while off + 8 <= len(data):
            kind, misc, size = struct.unpack_from("<IHH", data, off)
            if size == 0:
                break
            body = off + 8
            if kind == RECORD_SAMPLE:
                pid, tid, t, _cpu, _res, nr = struct.unpack_from("<IIQIIQ", data, body)
                ips = struct.unpack_from(f"<{nr}Q", data, body + 32)
                yield t, kind, tid, pid, misc, self._stack(pid, ips)
            elif kind == RECORD_SWITCH:
                pid, tid, t = struct.unpack_from("<IIQ", data, body)
                yield t, kind, tid, pid, misc, None
            elif kind == RECORD_LOST:
                self.status.lost_events += struct.unpack_from("<QQ", data, body)[1]
            off += size

    def _stack(self, pid: int, ips: tuple[int, ...]) -> tuple[int, int]:
        """Base stack id and blocked reason of a callchain (context markers split it)."""
        hit = self._stack_cache.get((pid, ips))
        if hit is None:
            kernel, user, part = [], [], None
            for ip in ips:
                if ip == CONTEXT_KERNEL:
                    part = kernel
                elif ip == CONTEXT_USER:
                    part = user
                elif ip < CONTEXT_USER and part is not None:
                    part.append(ip)
            native, kframes = self._syms.frames(pid, user, kernel)
            reason = blockreason.classify_kernel_stack(kframes)
            hit = self._stack_cache[(pid, ips)] = (self.base_stack(native, kframes), reason)
        return hit

    def _close(self) -> None:
        for ring in self._rings + self._sample_rings:
            ring.close()
        for fd in self._fds:
            os.close(fd)
        self._rings, self._sample_rings, self._fds = [], [], []
