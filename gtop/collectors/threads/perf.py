"""perf tier: per-thread switch records and switch-out callchains from ``perf_event_open``.

For every thread of the target, one ``sched:sched_switch`` tracepoint event per CPU with
``inherit`` (so new threads and child processes are followed by the kernel) and
``context_switch`` (PERF_RECORD_SWITCH at every switch in and out, flagged when the
thread was preempted). The tracepoint fires in the thread's own context as it leaves the
CPU, so its callchain is where the thread blocked; the blocked reason is read from those
kernel frames. Without a wakeup event, run-queue time after a wakeup counts as blocked;
preempted threads count as runnable. Needs CAP_PERFMON (or perf_event_paranoid <= 1) and
tracefs.

GPU waits: once a target process maps the CUDA runtime or driver, a uprobe and a
uretprobe (the ``uprobe`` PMU, one event per CPU for all processes mapping the file,
records filtered to the target's threads) on each blocking call of the BPF tier's list
(:data:`~gtop.collectors.threads.gpu_waits.CUDA_WAITS`) mark time inside the call
``GPU_WAIT``: blocked, on CPU (spinning) and runnable (preempted in it), as the BPF tier
does. Costs two events per function per CPU (file descriptors) and a few microseconds
per probed call; system-wide uprobes need CAP_PERFMON (or perf_event_paranoid <= 0), and
a refusal is counted in ``status.errors["uprobe"]``, not fatal.
"""

from __future__ import annotations

import os
import struct
import subprocess
import time
from dataclasses import dataclass

from gtop.collectors.threads import blockreason, perf_events, proctree
from gtop.collectors.threads.detach import detached_elsewhere
from gtop.collectors.threads.gpu_waits import RETURN_FIRST, GpuWaitProbes
from gtop.collectors.threads.perf_events import (
    CONTEXT_KERNEL,
    CONTEXT_USER,
    MISC_SWITCH_OUT,
    MISC_SWITCH_OUT_PREEMPT,
    RECORD_LOST,
    RECORD_SAMPLE,
    RECORD_SWITCH,
    Attr,
    PerfRing,
)
from gtop.collectors.threads.symbols import Symbolizer
from gtop.collectors.threads.tier import ThreadCollector
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState

_SAMPLE_TYPE = perf_events.SAMPLE_TID | perf_events.SAMPLE_TIME | perf_events.SAMPLE_CPU
_PROBE_TYPE = perf_events.SAMPLE_IDENTIFIER | perf_events.SAMPLE_TID | perf_events.SAMPLE_TIME
RECORD_GPU_ENTER, RECORD_GPU_EXIT = -1, -2  # our kinds for uprobe / uretprobe samples


@dataclass
class _Thread:
    pid: int
    on: bool
    since: int  # emitted up to here; the current state began at or before it
    state: int = ThreadState.ON_CPU
    reason: int = BlockReason.NONE
    stack: int = -1
    next_stack: tuple[int, int] = (-1, BlockReason.OTHER)  # from the switch-out sample
    gpu_depth: int = 0  # nested probed GPU calls it is inside


def ensure_tracefs() -> None:
    """Mount tracefs at /sys/kernel/tracing when nothing is mounted there (root only)."""
    if not os.path.exists("/sys/kernel/tracing/events") and not os.path.exists(
        "/sys/kernel/debug/tracing/events"
    ):
        done = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise OSError(f"cannot mount tracefs: {done.stderr.strip() or done.returncode}")


class PerfThreadCollector(ThreadCollector):
    """The perf tier."""

    tier = "perf"

    def __init__(
        self, hub, pid: int, *, sample_hz: int = 99,
        gpu_waits: dict[str, list[str]] | None = None, **kw,
    ) -> None:  # fmt: skip
        """``gpu_waits`` maps a library name to its blocking calls (default: the BPF
        tier's :data:`CUDA_WAITS`)."""
        super().__init__(hub, pid, **kw)
        self.gpu_waits = GpuWaitProbes(gpu_waits, self.status)
        self._probe_rings: list[PerfRing | None] = []  # uprobe records, per CPU
        self._probe_ids: dict[int, int] = {}  # event id -> RECORD_GPU_ENTER / EXIT
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
            self.gpu_waits.probe(set(table.values()), self._open_uprobe)

    def _open_uprobe(self, path: str, offset: int) -> None:
        """An entry and a return probe on every CPU, into the per-CPU probe rings."""
        raw = path.encode()
        fds: list[int] = []  # closed in _close, also on failure (a ring may be backed by one)
        try:
            for ret in RETURN_FIRST:
                kind = RECORD_GPU_EXIT if ret else RECORD_GPU_ENTER
                for cpu in range(self.ncpu):
                    attr = perf_events.uprobe(raw, offset, ret)
                    attr.sample_type = _PROBE_TYPE
                    attr.flags = perf_events.FLAG_USE_CLOCKID | perf_events.FLAG_SAMPLE_ID_ALL
                    attr.clockid = perf_events.CLOCK_MONOTONIC
                    fd = perf_events.open_event(attr, -1, cpu)
                    fds.append(fd)
                    self._probe_ids[perf_events.event_id(fd)] = kind
                    if len(self._probe_rings) <= cpu:
                        self._probe_rings.append(PerfRing(fd, pages=16))
                    else:
                        self._probe_rings[cpu].redirect(fd)
        finally:
            self._fds.extend(fds)

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
        for ring in self._probe_rings:
            records.extend(self._parse_probes(ring.read()))
        records.sort(key=lambda r: r[0])
        for t, kind, tid, pid, misc, stack in records:
            th = self._threads.get(tid)
            if th is None:
                if kind < 0:
                    continue  # a probed call of a process we do not follow
                # a thread created after open, followed through inherit
                th = self._threads[tid] = _Thread(pid, on=True, since=t)
            gpu = BlockReason.GPU_WAIT if th.gpu_depth else BlockReason.NONE
            if kind in (RECORD_GPU_ENTER, RECORD_GPU_EXIT):
                th.gpu_depth = max(th.gpu_depth + (1 if kind == RECORD_GPU_ENTER else -1), 0)
                if th.on and (th.gpu_depth > 0) != (gpu == BlockReason.GPU_WAIT):
                    self._emit(tid, th, t)  # on-CPU time inside the call is GPU_WAIT
                    th.reason = BlockReason.GPU_WAIT if th.gpu_depth else BlockReason.NONE
            elif kind == RECORD_SAMPLE:
                th.next_stack = stack
            elif misc & MISC_SWITCH_OUT:
                self._emit(tid, th, t)
                th.on = False
                if misc & MISC_SWITCH_OUT_PREEMPT:
                    th.state, th.reason = ThreadState.RUNNABLE, gpu
                    th.stack = th.next_stack[0]
                else:
                    th.state = ThreadState.BLOCKED
                    th.stack, th.reason = th.next_stack
                    if gpu:
                        th.reason = gpu
            else:
                self._emit(tid, th, t)
                th.on, th.state, th.reason, th.stack = True, ThreadState.ON_CPU, gpu, -1
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

    def _records(self, data: bytes):
        """(kind, misc, body offset) of each record in a ring's bytes; lost-record counts
        go to the status."""
        off = 0
        while off + 8 <= len(data):
            kind, misc, size = struct.unpack_from("<IHH", data, off)
            if size == 0:
                break
            if kind == RECORD_LOST:
                self.status.lost_events += struct.unpack_from("<QQ", data, off + 8)[1]
            else:
                yield kind, misc, off + 8
            off += size

    def _parse(self, data: bytes):
        """(time, kind, tid, pid, misc, (stack, reason)) per sample or switch record."""
        for kind, misc, body in self._records(data):
            if kind == RECORD_SAMPLE:
                pid, tid, t, _cpu, _res, nr = struct.unpack_from("<IIQIIQ", data, body)
                ips = struct.unpack_from(f"<{nr}Q", data, body + 32)
                yield t, kind, tid, pid, misc, self._stack(pid, ips)
            elif kind == RECORD_SWITCH:
                pid, tid, t = struct.unpack_from("<IIQ", data, body)
                yield t, kind, tid, pid, misc, None

    def _parse_probes(self, data: bytes):
        """(time, GPU enter/exit kind, tid, pid, 0, None) per uprobe sample."""
        for kind, _misc, body in self._records(data):
            if kind == RECORD_SAMPLE:
                ident, pid, tid, t = struct.unpack_from("<QIIQ", data, body)
                if ident in self._probe_ids:
                    yield t, self._probe_ids[ident], tid, pid, 0, None

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
        for ring in self._rings + self._sample_rings + self._probe_rings:
            ring.close()
        with detached_elsewhere(self._fds):
            for fd in self._fds:
                os.close(fd)
        self._rings, self._sample_rings, self._probe_rings, self._fds = [], [], [], []
