"""/proc tier: sample each thread's ``schedstat``, ``stat``, ``syscall`` and kernel ``stack``.

Works everywhere /proc does. On-CPU and run-queue time are exact (they are the kernel's
own schedstat counters between two samples); blocked time is the rest of the sample
period, classified by the syscall (or wait channel) seen at the sample. Where inside a
period each state fell is not known, so each period is laid out as up to three intervals:
the state the thread is in at the sample goes last. Files stay open and are re-read with
``pread`` at offset 0 (seq_file regenerates them), which keeps a sample to a few syscalls.

GPU waits: a blocked thread of a process that maps the CUDA runtime or driver is in a
GPU wait when its ``syscall`` file's user program counter, or a return address among the
first :data:`SCAN_BYTES` of its user stack (from the stack pointer, read through
``/proc/PID/mem``), lies inside one of the blocking calls the BPF tier probes
(:data:`~gtop.collectors.threads.gpu_waits.CUDA_WAITS`); the driver's waits are syscalls made
through libc, so the program counter alone is in libc. Only blocked time is seen so: a
call spinning on CPU is on-CPU time here. A stale return address left in an
uninitialised slot of a live frame could mislabel a wait; the bound keeps it rare.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from gtop.collectors.threads import blockreason, symbols
from gtop.collectors.threads.gpu_waits import CUDA_WAITS
from gtop.collectors.threads.proctree import kernel_frames
from gtop.collectors.threads.tier import ThreadCollector
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState

_FILES = ("schedstat", "stat", "syscall", "wchan", "stack")
SCAN_BYTES = 4096
"""How much of a blocked thread's user stack is searched for a GPU call's return address."""


@dataclass
class _Thread:
    pid: int
    fds: dict[str, int] = field(default_factory=dict)
    t_ns: int = 0
    run_ns: int = 0
    delay_ns: int = 0
    reason: int = BlockReason.OTHER
    stack: int = -1
    last: int | None = None  # index of its latest row in the unpublished batch


def _pread(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace")


class ProcThreadCollector(ThreadCollector):
    """Samples /proc at ``period_s`` (default 10 ms), publishing every ``publish_s``."""

    tier = "proc"

    def __init__(
        self, hub, pid: int, *, period_s: float = 0.01,
        gpu_waits: dict[str, list[str]] | None = None, **kw,
    ) -> None:  # fmt: skip
        """``gpu_waits`` maps a library name to its blocking calls (default: the BPF
        tier's :data:`CUDA_WAITS`)."""
        super().__init__(hub, pid, period_s=period_s, **kw)
        self.gpu_waits = CUDA_WAITS if gpu_waits is None else gpu_waits
        self._gpu_procs: dict[int, tuple[float, symbols.ProcessSymbols | None]] = {}
        self._margin_ns = int(period_s * 1.2e9)  # a period, plus jitter
        self.join_margin_ns = self._margin_ns
        self._gaps: deque[int] = deque(maxlen=int(2 / period_s))
        """The last ~2 s of gaps between polls: a row is placed within its poll's gap, so
        a Python sample joins only this far inside it (a loaded machine polls late)."""
        self._polled_ns = 0
        self._state: dict[int, _Thread] = {}
        self._rows: list[tuple] = []
        self._samples: list[tuple] = []
        self._published_at = 0.0
        self.publish_s = 0.1

    def _open(self) -> None:
        if not os.path.exists(f"/proc/{self.pid}"):
            raise ProcessLookupError(f"no process {self.pid}")
        self._tree_changed(self.threads)

    def _tree_changed(self, table: dict[int, int]) -> None:
        for tid, pid in table.items():
            if tid not in self._state:
                th = _Thread(pid)
                for name in _FILES:
                    # stack needs root; a missing file only loses detail
                    with contextlib.suppress(OSError):
                        th.fds[name] = os.open(f"/proc/{pid}/task/{tid}/{name}", os.O_RDONLY)
                if "schedstat" in th.fds:
                    self._state[tid] = th
                    self._sample(tid, th, first=True)

    def _drop(self, tid: int) -> None:
        for fd in self._state.pop(tid).fds.values():
            os.close(fd)

    def _sample(self, tid: int, th: _Thread, first: bool = False) -> None:
        try:
            now = time.monotonic_ns()
            run_ns, delay_ns = (int(x) for x in _pread(th.fds["schedstat"]).split()[:2])
            stat = _pread(th.fds["stat"])
            state = stat[stat.rindex(")") + 2]
            blocked = state in "SDI"
            # the kernel unwinds on every read: only blocked threads need their stack
            has_stack = blocked and "stack" in th.fds
            kstack = kernel_frames(_pread(th.fds["stack"])) if has_stack else ()
            if blocked:
                sc = _pread(th.fds["syscall"]).split() if "syscall" in th.fds else []
                nr = int(sc[0]) if sc and sc[0].lstrip("-").isdigit() else -1
                wchan = _pread(th.fds["wchan"]) if "wchan" in th.fds else ""
                reason = blockreason.classify(nr, wchan, kstack)
                if len(sc) >= 3 and self._in_gpu_call(
                    th.pid, tid, int(sc[-1], 16), int(sc[-2], 16)
                ):
                    reason = BlockReason.GPU_WAIT
        except (OSError, ValueError, IndexError):
            self._drop(tid)  # the thread exited between two samples
            return
        stack = self.base_stack((), kstack)
        if not first:
            d_on, d_rq = run_ns - th.run_ns, delay_ns - th.delay_ns
            d_blk = max(now - th.t_ns - d_on - d_rq, 0)
            parts = [
                (ThreadState.ON_CPU, BlockReason.NONE, d_on, -1),
                (ThreadState.RUNNABLE, BlockReason.NONE, d_rq, -1),
            ]
            if blocked:
                parts.append((ThreadState.BLOCKED, reason, d_blk, stack))
            else:  # it runs now; the blocked part came first, for the reason seen before
                parts = [(ThreadState.BLOCKED, th.reason, d_blk, th.stack), *parts[::-1]]
            for st, why, dur, sid in parts:
                if dur > 0:
                    self._append(th, (th.t_ns, th.t_ns + dur, th.pid, tid, st, why, sid))
                    th.t_ns += dur
        if state == "R":
            self._samples.append((now, th.pid, tid, -1, stack))
        # th.t_ns is a cursor: counters read late (this thread was preempted between the
        # clock and the read) overrun "now", and the next period's blocked part absorbs it
        th.t_ns = max(th.t_ns, now) if not first else now
        th.run_ns, th.delay_ns = run_ns, delay_ns
        if blocked:
            th.reason, th.stack = reason, stack

    def _in_gpu_call(self, pid: int, tid: int, pc: int, sp: int) -> bool:
        """Whether a blocked thread's program counter or stack is inside a GPU-wait call."""
        now = time.monotonic()
        at, syms = self._gpu_procs.get(pid, (-10.0, None))
        if now - at > 2.0:  # a process maps libcuda once CUDA starts: look again later
            mapped = any(symbols.mapped_files(pid, lib) for lib in self.gpu_waits)
            syms = symbols.ProcessSymbols(pid) if mapped else None
            self._gpu_procs[pid] = (now, syms)
        if syms is None:
            return False
        addrs = [pc]
        try:
            with open(f"/proc/{pid}/task/{tid}/mem", "rb", buffering=0) as f:
                f.seek(sp)
                data = f.read(SCAN_BYTES)
            addrs += np.frombuffer(data[: len(data) // 8 * 8], "<u8").tolist()
        except (OSError, ValueError, OverflowError):
            pass  # no ptrace access: the program counter only
        for addr in addrs:
            path = syms.path_of(addr)
            if path is None:
                continue
            base = os.path.basename(path)
            funcs = next((f for lib, f in self.gpu_waits.items() if lib in base), None)
            if funcs and syms.resolve([addr])[0] in funcs:
                return True
        return False

    def _append(self, th: _Thread, row: tuple) -> None:
        """Add a row, or extend the thread's previous one when it continues it."""
        i = th.last
        if i is not None and i < len(self._rows):
            prev = self._rows[i]
            if prev[1] == row[0] and prev[4:] == row[4:]:
                self._rows[i] = (prev[0], row[1], *prev[2:])
                return
        th.last = len(self._rows)
        self._rows.append(row)

    def _poll(self, final: bool) -> None:
        now = time.monotonic_ns()
        if self._polled_ns:
            self._gaps.append(now - self._polled_ns)
            self.join_margin_ns = max(self._margin_ns, int(1.2 * max(self._gaps)))
        self._polled_ns = now
        for tid in [t for t in self._state if t not in self.threads]:
            self._sample(tid, self._state[tid])  # gone from the tree: last look, then drop
            if tid in self._state:
                self._drop(tid)
        for tid, th in list(self._state.items()):
            self._sample(tid, th)
        if final or time.monotonic() - self._published_at >= self.publish_s:
            self._published_at = time.monotonic()
            self.submit(THREAD_STATE.name, _table(THREAD_STATE.empty(len(self._rows)), self._rows))
            self.submit(
                CPU_SAMPLE.name, _table(CPU_SAMPLE.empty(len(self._samples)), self._samples)
            )
            self._rows, self._samples = [], []
            for th in self._state.values():
                th.last = None

    def _close(self) -> None:
        for tid in list(self._state):
            self._drop(tid)


_FIELDS = {
    THREAD_STATE.name: ("t_ns", "end_ns", "pid", "tid", "state", "reason", "stack_id"),
    CPU_SAMPLE.name: ("t_ns", "pid", "tid", "cpu", "stack_id"),
}


def _table(out: np.ndarray, rows: list[tuple]) -> np.ndarray:
    """Fill the named fields of a record array from row tuples (in ``_FIELDS`` order)."""
    if rows:
        names = _FIELDS[THREAD_STATE.name if "end_ns" in out.dtype.names else CPU_SAMPLE.name]
        for name, column in zip(names, zip(*rows, strict=True), strict=True):
            out[name] = column
    return out
