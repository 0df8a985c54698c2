"""BPF tier: exact per-thread on/off-CPU intervals with stacks, from ``ebpf/offcpu.bpf.c``.

The scheduler hooks are tried as ``tp_btf``, then ``raw_tp``, then ``tracepoint``; the first
kind that loads and attaches wins (:attr:`BpfThreadCollector.mode`). Records arrive in
per-CPU rings of fixed slots inside mmap-ed array maps and are read as numpy arrays; a ring
that wraps before it is read counts the overwritten records as lost. Threads already off
CPU at attach are seeded from /proc, and intervals still in progress are reported at each
read (up to "now") and cut off so that the final record does not count them twice.
Kernel and user stacks have a stack map each (ids that collide in one map's hash buckets
are refused and counted in ``status.stack_errors``, never silently dropped). On-CPU time
inside I/O syscalls is reported as on-CPU rows with reason ``IO``.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

import numpy as np

from gtop.collectors.threads import blockreason, perf_events, proctree
from gtop.collectors.threads.ebpf.libbpf import BpfError, BpfObject
from gtop.collectors.threads.gpu_waits import RETURN_FIRST, GpuWaitProbes
from gtop.collectors.threads.symbols import Symbolizer
from gtop.collectors.threads.tier import ThreadCollector
from gtop.collectors.threads.uprobe_holder import UprobeHolder
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState

OBJECT = Path(__file__).parent / "ebpf" / "offcpu.bpf.o"
MODES = ("btf", "raw", "tp")
HOOKS = ("switch", "wakeup", "sys_enter", "sys_exit", "fork", "exit")
SLOTS = 1 << 13  # SLOT_BITS in offcpu.h
FLAG_PREEMPTED, FLAG_SEEDED, FLAG_GPU_WAIT = 1, 2, 4
MAX_STACK = 127
# Mirrors of offcpu.h.
SWITCH_EVENT = np.dtype(
    [("cpu_ns", "<u8"), ("on_ns", "<u8"), ("off_ns", "<u8"), ("wake_ns", "<u8"), ("in_ns", "<u8"),
     ("pid", "<u4"), ("tid", "<u4"), ("syscall", "<i4"), ("ustack", "<i4"),
     ("kstack", "<i4"), ("flags", "<u4"), ("gpu_enter_ns", "<u8"), ("gpu_exit_ns", "<u8"),
     ("io_enter_ns", "<u8"), ("io_head_ns", "<u8"), ("io_mid_start_ns", "<u8"),
     ("io_mid_ns", "<u8")]
)  # fmt: skip
SAMPLE_EVENT = np.dtype(
    [("t_ns", "<u8"), ("pid", "<u4"), ("tid", "<u4"), ("ustack", "<i4"), ("kstack", "<i4"),
     ("cpu", "<u4"), ("pad", "<u4")]
)  # fmt: skip


_STATE_FIELDS = [
    ("exec_ns", "<u8"), ("cpu_ns", "<u8"), ("on_ns", "<u8"), ("off_ns", "<u8"), ("wake_ns", "<u8"),
    ("pid", "<u4"), ("syscall", "<i4"), ("ustack", "<i4"), ("kstack", "<i4"), ("flags", "<u4"),
    ("oncpu", "<u4"), ("gpu_depth", "<u4"), ("pad", "<u4"), ("gpu_enter_ns", "<u8"),
    ("gpu_exit_ns", "<u8"), ("io_enter_ns", "<u8"), ("io_head_ns", "<u8"),
    ("io_mid_start_ns", "<u8"), ("io_mid_ns", "<u8"),
]  # fmt: skip
_CTYPE = {"<u8": ctypes.c_uint64, "<u4": ctypes.c_uint32, "<i4": ctypes.c_int32}


class _State(ctypes.Structure):
    _fields_ = [(name, _CTYPE[code]) for name, code in _STATE_FIELDS]


class BpfThreadCollector(ThreadCollector):
    """The BPF tier.

    ``sample_hz=0`` turns off on-CPU sampling; ``mode`` forces a hook kind (``btf``,
    ``raw``, ``tp``); ``stack_entries`` sizes each of the two stack maps (kernel stacks,
    user stacks: ~1 KiB an entry), whose refusals (full, or hash collisions) are counted
    in ``status.stack_errors`` (``counters``: ``kstack_errors``, ``ustack_errors``).
    ``gpu_waits`` maps a library name to functions whose blocked time is GPU waiting
    (default :data:`CUDA_WAITS`);
    each library file a target maps gets an entry and a return uprobe on them, once,
    system-wide (see :mod:`gpu_waits`; a uprobe costs microseconds per call, so only
    blocking calls are probed).
    """

    tier = "bpf"

    def __init__(
        self, hub, pid: int, *, sample_hz: int = 99, mode: str = "auto",
        user_stacks: bool = True, stack_entries: int = 32768,
        gpu_waits: dict[str, list[str]] | None = None, **kw,
    ) -> None:  # fmt: skip
        super().__init__(hub, pid, **kw)
        self.sample_hz = sample_hz
        self.modes = MODES if mode == "auto" else (mode,)
        self.mode = ""
        self.user_stacks = user_stacks
        self.stack_entries = stack_entries
        self.gpu_waits = GpuWaitProbes(gpu_waits, self.status, background=True)
        self.ncpu = os.cpu_count() or 1
        self._obj: BpfObject | None = None
        self._tails = {
            "switch": np.zeros(self.ncpu, np.uint64),
            "sample": np.zeros(self.ncpu, np.uint64),
        }
        self._cut: dict[int, int] = {}
        self._cut_io: dict[int, tuple[int, int, int]] = {}
        self._seeded: dict[int, int] = {}
        self._stack_cache: dict[tuple[int, int], int] = {}
        self._reason_cache: dict[int, int] = {}
        self._syms: Symbolizer | None = None
        self._tracked: set[int] = set()
        self._waits_probed = False
        self._holder: UprobeHolder | None = None

    # --- open: load, track, attach, seed -----------------------------------------------
    def _open(self) -> None:
        errors = []
        for mode in self.modes:
            try:
                self._obj = self._load(mode)
                self.mode = mode
                break
            except (BpfError, OSError) as exc:
                errors.append(f"[{mode}] {exc}")
        else:
            raise BpfError("BPF tier unavailable:\n" + "\n".join(errors))
        self.status.counters["mode"] = self.mode
        self._syms = Symbolizer()
        self._syms.read_kernel_soon()
        self._rings = {name: self._obj.mmap(f"{name}_ring") for name in ("switch", "sample")}
        self._seed()
        # GPU-wait uprobes are queued at the first poll and attached on a thread of their
        # own (GpuWaitProbes): one attach waits for every process mapping the library,
        # which took 15-45 s with four targets on the H200 and must hold up neither the
        # start (a recording's --duration counts from it) nor a poll

    def _load(self, mode: str) -> BpfObject:
        obj = BpfObject(str(OBJECT))
        try:
            obj.set_rodata("nr_cpus", ctypes.c_uint32(self.ncpu))
            obj.set_rodata("user_stacks", ctypes.c_bool(self.user_stacks))
            obj.set_max_entries("switch_ring", self.ncpu * SLOTS)
            obj.set_max_entries("sample_ring", self.ncpu * SLOTS)
            obj.set_rodata("io_syscall", _io_syscalls())
            obj.set_max_entries("kstacks", self.stack_entries)
            obj.set_max_entries("ustacks", self.stack_entries)
            for other in MODES:
                for hook in HOOKS:
                    obj.autoload(f"{other}_{hook}", other == mode)
            obj.load()
            self._obj = obj
            self._tree_changed(self.threads)
            for hook in HOOKS:
                obj.attach(f"{mode}_{hook}")
            if self.sample_hz:
                for cpu in range(self.ncpu):
                    obj.attach(
                        "on_cpu_sample",
                        perf_events.open_event(perf_events.cpu_clock(self.sample_hz), -1, cpu),
                    )
        except BaseException:
            obj.close()
            self._obj = None
            self._tracked.clear()
            raise
        return obj

    def _tree_changed(self, table: dict[int, int]) -> None:
        if self._obj is None:
            return
        one = ctypes.c_uint8(1)
        for pid in set(table.values()) - self._tracked:
            self._obj.update("tracked", ctypes.c_uint32(pid), one)
            self._tracked.add(pid)
        self._tracked &= set(table.values())
        if self.mode:  # loaded and attached
            self._probe_gpu_waits()

    def _probe_gpu_waits(self) -> None:
        """Attach the GPU-wait uprobes (system-wide, once per file) that tracked processes'
        libraries need; the programs keep only tracked processes' calls."""
        if self._obj is not None:
            self.gpu_waits.probe(self._tracked, self._attach_wait)

    def _attach_wait(self, path: str, offset: int) -> None:
        """Attach one GPU-wait probe (on the ``gtop-uprobes`` thread), through the child
        that holds them (:mod:`~gtop.collectors.threads.uprobe_holder`), started with the
        first."""
        if self._holder is None:
            obj = self._obj
            if obj is None:
                raise OSError("the BPF tier is closed")
            enter, leave = obj.program_fd("gpu_wait_enter"), obj.program_fd("gpu_wait_exit")
            self._holder = UprobeHolder(enter, leave)
        for ret in RETURN_FIRST:
            self._holder.attach(path, offset, ret)

    def _seed(self) -> None:
        """Threads off CPU since before attach never switch out: start their interval now."""
        now = time.monotonic_ns()
        for tid, pid in self.threads.items():
            blocked = proctree.blocked_state(pid, tid)
            if blocked is None:
                continue
            syscall, kstack = blocked
            state = _State(0, 0, 0, now, 0, pid, syscall, -1, -1, FLAG_SEEDED, 0, 0, 0)
            if blockreason.classify_syscalls(np.array([syscall]))[0] == BlockReason.IO:
                state.io_enter_ns = now  # in an I/O call since before attach
            if self._obj.update("threads", ctypes.c_uint32(tid), state, 1):  # BPF_NOEXIST
                self._seeded[tid] = self.base_stack((), kstack)

    # --- read -----------------------------------------------------------------------------
    def _drain(self, name: str, dtype: np.dtype) -> np.ndarray:
        bss = self._obj.global_bytes(".bss")
        off = self._obj.global_offset(f"{name}_head")
        heads = np.frombuffer(bss, np.uint64, self.ncpu, off).copy()
        ring = np.frombuffer(self._rings[name], dtype, self.ncpu * SLOTS).reshape(self.ncpu, SLOTS)
        tails = self._tails[name]
        spans = {}
        for cpu in np.flatnonzero(heads != tails).tolist():
            lo, hi = int(tails[cpu]), int(heads[cpu])
            if hi - lo > SLOTS:
                self.status.lost_events += hi - lo - SLOTS
                lo = hi - SLOTS
            spans[cpu] = (lo, ring[cpu, np.arange(lo, hi) & (SLOTS - 1)].copy())
        # slots the kernel overwrote while we copied them are not trustworthy: drop them
        after = np.frombuffer(self._obj.global_bytes(".bss"), np.uint64, self.ncpu, off)
        parts = []
        for cpu, (lo, rows) in spans.items():
            overrun = min(int(after[cpu]) - SLOTS - lo, len(rows))
            if overrun > 0:
                self.status.lost_events += overrun
                rows = rows[overrun:]
            parts.append(rows)
        self._tails[name] = heads
        return np.concatenate(parts) if parts else np.empty(0, dtype)

    def _poll(self, final: bool) -> None:
        if not self._waits_probed and not final:
            self._waits_probed = True
            self._probe_gpu_waits()  # see _open
        t_drain = time.monotonic_ns()
        events = self._drain("switch", SWITCH_EVENT)
        samples = self._drain("sample", SAMPLE_EVENT)
        self.submit(THREAD_STATE.name, self._intervals(events))
        self.submit(THREAD_STATE.name, self._in_progress(t_drain))
        self.submit(CPU_SAMPLE.name, self._samples(samples))
        bss = self._obj.global_bytes(".bss")
        for name in ("kstack_errors", "ustack_errors", "state_full", "missed_switch_ins",
                     "missed_switch_outs"):  # fmt: skip
            value = int(np.frombuffer(bss, np.uint64, 1, self._obj.global_offset(name))[0])
            self.status.counters[name] = value
        self.status.stack_errors = int(self.status.counters["kstack_errors"]) + int(
            self.status.counters["ustack_errors"]
        )
        self.status.counters["stack_errors"] = self.status.stack_errors

    def _intervals(self, ev: np.ndarray) -> np.ndarray:
        """THREAD_STATE rows for switch events: on-CPU, stolen, blocked, runnable.

        On-CPU time is the scheduler's CPU time for the stretch (as schedstat counts it);
        the rest of the stretch's wall time (a VM's stolen time) waited for a core, so it
        is reported as runnable, after the on-CPU part.

        Time inside a probed GPU call (:data:`CUDA_WAITS`) has reason ``GPU_WAIT`` in
        every state: blocked; on-CPU (a spinning synchronise; only the thread's latest
        call within one on-CPU stretch is seen); and runnable after being preempted in it
        (a yielding synchronise). On-CPU time inside an I/O syscall (those
        :mod:`blockreason` calls I/O) has reason ``IO`` (see :func:`_io_spans`).
        Other on-CPU and runnable rows have reason ``NONE``.
        """
        n = len(ev)
        cut = np.zeros(n, np.int64)
        ev = ev.copy()
        for tid in np.unique(ev["tid"]).tolist():
            if tid in self._cut:
                mine = ev["tid"] == tid
                cut[mine] = self._cut.pop(tid)
                _after_cut(ev, mine, cut, *self._cut_io.pop(tid))
        on, off = ev["on_ns"].astype(np.int64), ev["off_ns"].astype(np.int64)
        wake, t_in = ev["wake_ns"].astype(np.int64), ev["in_ns"].astype(np.int64)
        wake = np.where(wake > 0, wake, t_in)
        on = np.where(on > 0, on, off)  # unknown start of the on-CPU stretch: drop it
        cpu = ev["cpu_ns"].astype(np.int64)
        ran = np.where((cpu > 0) & (cpu < off - on), on + cpu, off)
        stacks = self._stack_ids(ev)
        in_sync = (ev["flags"] & FLAG_GPU_WAIT) != 0
        reason = self._reasons(ev["syscall"], stacks)
        reason[in_sync] = BlockReason.GPU_WAIT
        # the on-CPU part inside a probed GPU call (spinning): [g0, g1) within [on, ran)
        enter, exit_ = ev["gpu_enter_ns"].astype(np.int64), ev["gpu_exit_ns"].astype(np.int64)
        g1 = np.where(in_sync, off, np.where(exit_ > enter, np.minimum(exit_, off), on))
        g0 = _squeeze(np.clip(enter, on, off), on, off, ran)
        g1 = np.clip(_squeeze(g1, on, off, ran), g0, ran)
        yielded = in_sync & ((ev["flags"] & FLAG_PREEMPTED) != 0)  # spin-yield in the call
        waiting = np.where(yielded, BlockReason.GPU_WAIT, BlockReason.NONE)
        # [on, ran) cut at every edge of the GPU-call and I/O spans, each piece with the
        # reason of the span it lies in (a GPU call first: it never does I/O syscalls)
        io = [
            (_squeeze(a, on, off, ran), _squeeze(b, on, off, ran))
            for a, b in _io_spans(ev, on, off)
        ]
        edges = np.sort(np.stack([on, ran, g0, g1, *[x for sp in io for x in sp]], axis=1), axis=1)
        a, b = edges[:, :-1], edges[:, 1:]
        why = np.full(a.shape, BlockReason.NONE, np.uint8)
        for s0, s1 in io:
            why[(a >= s0[:, None]) & (a < s1[:, None])] = BlockReason.IO
        why[(a >= g0[:, None]) & (a < g1[:, None])] = BlockReason.GPU_WAIT
        k_on = a.shape[1]
        out = THREAD_STATE.empty((k_on + 3) * n)
        pieces = [(a[:, k], b[:, k], ThreadState.ON_CPU, why[:, k]) for k in range(k_on)]
        pieces += [
            (ran, off, ThreadState.RUNNABLE, BlockReason.NONE),
            (off, wake, ThreadState.BLOCKED, reason),
            (wake, t_in, ThreadState.RUNNABLE, waiting),
        ]
        for k, (p0, p1, state, r) in enumerate(pieces):
            rows = out[k * n : (k + 1) * n]
            rows["t_ns"], rows["end_ns"] = np.maximum(p0, cut), np.maximum(p1, cut)
            rows["pid"], rows["tid"], rows["state"] = ev["pid"], ev["tid"], state
            rows["reason"] = r
            if k >= k_on + 1:
                rows["stack_id"] = stacks
        return out

    def _reasons(self, syscalls: np.ndarray, stacks: np.ndarray) -> np.ndarray:
        """Blocked reasons: by syscall, else (OTHER: a syscall not in the tables, or none)
        by the kernel stack at switch-out."""
        reason = blockreason.classify_syscalls(syscalls)
        other = np.flatnonzero(reason == BlockReason.OTHER)
        if len(other):
            sids, inverse = np.unique(stacks[other], return_inverse=True)
            by_stack = np.array(
                [self._kernel_reason(int(sid)) for sid in sids.tolist()], dtype=np.uint8
            )
            reason[other] = by_stack[inverse.reshape(-1)]
        return reason

    def _kernel_reason(self, sid: int) -> int:
        if sid < 0:
            return BlockReason.OTHER
        hit = self._reason_cache.get(sid)
        if hit is None:
            hit = self._reason_cache[sid] = blockreason.classify_kernel_stack(self._base[sid][1])
        return hit

    def _in_progress(self, t_drain: int) -> np.ndarray:
        """Rows up to now for each thread's current state; later records start after them.

        A thread woken (or preempted) and not yet back on a CPU gets rows only up to its
        wake-up: its runnable tail is left to its next record, which places there a
        switch-in that no hook saw (see ``offcpu.bpf.c``), had it been cut off here.
        """
        now = time.monotonic_ns()
        states, tids = [], []
        state = _State()
        for tid in self.threads:
            # a switch-in after the drain has a record we have not read: wait for it
            found = self._obj.lookup("threads", ctypes.c_uint32(tid), state)
            if found and state.on_ns < t_drain - 1_000_000:
                states.append(bytes(state))
                tids.append(tid)
        if not tids:
            return THREAD_STATE.empty()
        raw = np.frombuffer(b"".join(states), _STATE_DTYPE)
        ev = np.zeros(len(raw), SWITCH_EVENT)
        for name in ("cpu_ns", "on_ns", "off_ns", "wake_ns", "pid", "syscall", "ustack", "kstack",
                     "flags", "gpu_enter_ns", "gpu_exit_ns", "io_enter_ns", "io_head_ns",
                     "io_mid_start_ns", "io_mid_ns"):  # fmt: skip
            ev[name] = raw[name]
        ev["tid"] = tids
        oncpu = raw["oncpu"] == 1
        woken = ~oncpu & (raw["wake_ns"] > 0) & (raw["wake_ns"] <= now)
        ev["in_ns"] = np.where(woken, raw["wake_ns"], now)
        # a running thread's flags are from its last switch-out: in a GPU call is now
        ev["flags"][oncpu] = np.where(raw["gpu_depth"][oncpu] > 0, FLAG_GPU_WAIT, 0)
        ev["off_ns"][oncpu] = now  # running: only the on-CPU part, up to now
        ev["wake_ns"][oncpu] = now
        ev["cpu_ns"][oncpu] = 0  # that stretch's CPU time is not known yet: wall time
        rows = self._intervals(ev)
        for i, tid in enumerate(tids):
            self._cut[tid] = int(ev["in_ns"][i])
            self._cut_io[tid] = (int(raw["on_ns"][i]), int(raw["io_mid_ns"][i]),
                                 int(raw["io_enter_ns"][i]))  # fmt: skip
        return rows

    def _samples(self, s: np.ndarray) -> np.ndarray:
        out = CPU_SAMPLE.empty(len(s))
        out["t_ns"], out["pid"], out["tid"] = s["t_ns"], s["pid"], s["tid"]
        out["cpu"] = s["cpu"]
        out["stack_id"] = self._stack_ids(s)
        return out

    # --- stacks -----------------------------------------------------------------------------
    def _stack_ids(self, ev: np.ndarray) -> np.ndarray:
        """Base stack ids for the (pid, user stack, kernel stack) of each record."""
        keys = np.stack([ev["pid"].astype(np.int64), ev["ustack"], ev["kstack"]], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        ids = np.array([self._base_for(*map(int, k)) for k in uniq], dtype=np.int32)
        out = ids[inverse.reshape(-1)] if len(ev) else np.empty(0, np.int32)
        if "flags" in ev.dtype.names:
            seeded = (ev["flags"] & FLAG_SEEDED) != 0
            for i in np.flatnonzero(seeded):
                out[i] = self._seeded.get(int(ev["tid"][i]), -1)
        return out

    def _base_for(self, pid: int, ustack: int, kstack: int) -> int:
        key = (pid, (ustack << 32) | (kstack & 0xFFFFFFFF))
        sid = self._stack_cache.get(key)
        if sid is None:
            native, kernel = self._syms.frames(
                pid, self._addresses("ustacks", ustack), self._addresses("kstacks", kstack)
            )
            sid = self._stack_cache[key] = self.base_stack(native, kernel)
        return sid

    def _addresses(self, stack_map: str, stack: int) -> list[int]:
        """The addresses of stack ``stack`` in ``stack_map`` (``kstacks``/``ustacks``)."""
        if stack < 0:
            return []
        buf = (ctypes.c_uint64 * MAX_STACK)()
        if not self._obj.lookup(stack_map, ctypes.c_uint32(stack), buf):
            return []
        return [a for a in buf if a]

    def _close(self) -> None:
        # attach nothing more and let the holder go: it removes its probes as it exits,
        # without gtop waiting (a probe in progress finishes there)
        self.gpu_waits.stop()
        if self._holder is not None:
            self._holder.close()
        if self._obj is not None:
            self._obj.close()
            self._obj = None


_STATE_DTYPE = np.dtype(_STATE_FIELDS)


def _squeeze(t: np.ndarray, on: np.ndarray, off: np.ndarray, ran: np.ndarray) -> np.ndarray:
    """Times in the stretch ``[on, off)`` moved into its on-CPU part ``[on, ran)``, in
    proportion: the time the thread waited for a core within it (a VM's stolen time) is
    spread evenly over the stretch, not taken from whatever ran last."""
    wall = off - on
    scaled = on + (t - on) * ((ran - on) / np.maximum(wall, 1))
    return np.where(wall > ran - on, np.clip(scaled.astype(np.int64), on, ran), t)


def _after_cut(
    ev: np.ndarray, mine: np.ndarray, cut: np.ndarray, on: int, mid: int, enter: int
) -> None:
    """Keep only the middle I/O calls' time after ``cut`` in the thread's stretch that
    was in progress at the cut (rows up to the cut were already reported): at the cut its
    finished calls had taken ``mid`` and a call in progress had been entered at ``enter``.
    The total is placed from its first entry (:func:`_io_spans`), so without this a
    stretch reported in parts would lose the calls' time between the parts."""
    same = mine & (ev["on_ns"] == on)
    if not same.any():
        return
    done = ev["io_mid_ns"][same].astype(np.int64) - mid
    # the call in progress at the cut returned since: its part before the cut is reported
    returned = (enter >= on > 0) & (ev["io_enter_ns"][same] != enter)
    done -= np.where(returned, np.maximum(cut[same] - enter, 0), 0)
    ev["io_mid_ns"][same] = np.maximum(done, 0)
    ev["io_mid_start_ns"][same] = np.maximum(ev["io_mid_start_ns"][same], cut[same])


def _io_spans(
    ev: np.ndarray, on: np.ndarray, off: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The spans of each on-CPU stretch ``[on, off)`` (wall time) spent inside I/O syscalls.

    Three spans, each clipped to the stretch and empty when absent: the head, from
    switch-in to the return of the I/O call the thread was switched in inside (it had
    blocked, or been preempted, in it); the tail, from the entry of the I/O call in
    progress at switch-out to the end (the whole stretch when it was entered before the
    switch-in and has not returned); and the calls entered and returned within the
    stretch. Head and tail are exact. The middle calls are known by their total and the
    first one's entry only, so they are placed as one span of that total from that entry:
    exact in amount within the stretch, approximate in place (the gaps between them,
    application code, come after it instead of between them).
    """
    enter = ev["io_enter_ns"].astype(np.int64)
    head = ev["io_head_ns"].astype(np.int64)
    m0 = ev["io_mid_start_ns"].astype(np.int64)
    mid = ev["io_mid_ns"].astype(np.int64)
    h1 = np.where(head > 0, np.clip(head, on, off), on)
    t0 = np.where(enter > 0, np.clip(enter, on, off), off)
    m0 = np.where(mid > 0, np.clip(m0, h1, off), on)
    m1 = np.where(mid > 0, np.minimum(m0 + mid, np.maximum(t0, m0)), on)
    return [(on, h1), (m0, m1), (t0, off)]


def _io_syscalls() -> ctypes.Array:
    """``io_syscall[]`` for the BPF object: 1 for the syscalls :mod:`blockreason` calls I/O."""
    table = (blockreason.SYSCALL_REASON == BlockReason.IO).astype(np.uint8)
    return (ctypes.c_uint8 * len(table)).from_buffer_copy(table.tobytes())
