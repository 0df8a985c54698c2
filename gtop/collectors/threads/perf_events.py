"""``perf_event_open`` through ctypes: the attribute struct, opening, and ring buffers.

Only what the host tiers use: software, tracepoint and uprobe events, per-task or per-CPU,
with records read from the mmap-ed ring buffer as raw bytes (:meth:`PerfRing.read`).
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct

_NR = {"x86_64": 298, "aarch64": 241}[os.uname().machine]
_libc = ctypes.CDLL(None, use_errno=True)

TYPE_SOFTWARE, TYPE_TRACEPOINT = 1, 2
SAMPLE_TID, SAMPLE_TIME, SAMPLE_CPU, SAMPLE_CALLCHAIN = 1 << 1, 1 << 2, 1 << 7, 1 << 5
SAMPLE_IDENTIFIER = 1 << 16
FLAG_INHERIT, FLAG_FREQ = 1 << 1, 1 << 10
FLAG_SAMPLE_ID_ALL, FLAG_USE_CLOCKID, FLAG_CONTEXT_SWITCH = 1 << 18, 1 << 25, 1 << 26
RECORD_LOST, RECORD_SAMPLE, RECORD_SWITCH = 2, 9, 14
MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT = 1 << 13, 1 << 14
CONTEXT_KERNEL, CONTEXT_USER = 2**64 - 128, 2**64 - 512
_IOC_SET_OUTPUT = 0x2405
_IOC_ID = 0x80082407  # _IOR('$', 7, __u64 *)
UPROBE_PMU = "/sys/bus/event_source/devices/uprobe"
CLOCK_MONOTONIC = 1


class Attr(ctypes.Structure):
    """``struct perf_event_attr`` up to PERF_ATTR_SIZE_VER5 (112 bytes)."""

    _fields_ = [
        ("type", ctypes.c_uint32), ("size", ctypes.c_uint32), ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64), ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64), ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32), ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64), ("config2", ctypes.c_uint64),
        ("branch_sample_type", ctypes.c_uint64), ("sample_regs_user", ctypes.c_uint64),
        ("sample_stack_user", ctypes.c_uint32), ("clockid", ctypes.c_int32),
        ("sample_regs_intr", ctypes.c_uint64), ("aux_watermark", ctypes.c_uint32),
        ("sample_max_stack", ctypes.c_uint16), ("reserved", ctypes.c_uint16),
    ]  # fmt: skip


def open_event(attr: Attr, pid: int, cpu: int) -> int:
    """perf_event_open(2) with CLOEXEC.

    Raises:
        OSError: refused (perf_event_paranoid, CAP_PERFMON, or a gone task: ESRCH).
    """
    attr.size = ctypes.sizeof(Attr)
    fd = _libc.syscall(_NR, ctypes.byref(attr), pid, cpu, -1, 8)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"perf_event_open(pid {pid}, cpu {cpu}): {os.strerror(err)}")
    return fd


def cpu_clock(hz: int) -> Attr:
    """A ``cpu-clock`` software event sampling at ``hz`` (for a BPF program to attach to)."""
    return Attr(type=TYPE_SOFTWARE, config=0, sample_period=hz, flags=FLAG_FREQ)


def uprobe(path: bytes, offset: int, ret: bool) -> Attr:
    """A uprobe (``ret``: a uretprobe) on the function at file ``offset`` of ``path``.

    Through the ``uprobe`` PMU (kernel 4.17+, no tracefs): ``config1`` points at the path
    and ``config2`` is the offset; the retprobe bit is where the PMU's ``format/retprobe``
    says. ``path`` must stay alive until the event is opened. Raises ``OSError`` when the
    PMU is missing.
    """
    with open(f"{UPROBE_PMU}/type") as f:
        pmu = int(f.read())
    with open(f"{UPROBE_PMU}/format/retprobe") as f:
        bit = int(f.read().strip().split(":")[1])  # "config:0"
    return Attr(
        type=pmu, config=(1 << bit) if ret else 0, sample_period=1,
        config1=ctypes.cast(ctypes.c_char_p(path), ctypes.c_void_p).value, config2=offset,
    )  # fmt: skip


def event_id(fd: int) -> int:
    """The kernel's id of an event (``SAMPLE_IDENTIFIER`` in its records)."""
    import fcntl

    buf = bytearray(8)
    fcntl.ioctl(fd, _IOC_ID, buf)
    return struct.unpack("<Q", buf)[0]


def tracepoint_id(category: str, name: str) -> int:
    """The id of a tracepoint, from tracefs (mounted by the caller where needed)."""
    for root in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing"):
        path = f"{root}/events/{category}/{name}/id"
        if os.path.exists(path):
            with open(path) as f:
                return int(f.read())
    raise FileNotFoundError(f"tracepoint {category}:{name}: tracefs not mounted")


class PerfRing:
    """The mmap-ed ring buffer of one event fd; other fds can be redirected into it."""

    def __init__(self, fd: int, pages: int = 64) -> None:
        self.fd = fd
        self._map = mmap.mmap(fd, (pages + 1) * mmap.PAGESIZE, mmap.MAP_SHARED)
        self._data_off = mmap.PAGESIZE
        self._size = pages * mmap.PAGESIZE

    def redirect(self, other_fd: int) -> None:
        """Send another event's records to this buffer (same CPU)."""
        import fcntl

        fcntl.ioctl(other_fd, _IOC_SET_OUTPUT, self.fd)

    def read(self) -> bytes:
        """Every record written since the last read, as one byte string."""
        head = struct.unpack_from("<Q", self._map, 1024)[0]
        tail = struct.unpack_from("<Q", self._map, 1032)[0]
        if head == tail:
            return b""
        a, b = tail % self._size, head % self._size
        base = self._data_off
        if head - tail >= self._size or b <= a:
            data = self._map[base + a : base + self._size] + self._map[base : base + b]
        else:
            data = self._map[base + a : base + b]
        struct.pack_into("<Q", self._map, 1032, head)
        return data

    def close(self) -> None:
        self._map.close()
