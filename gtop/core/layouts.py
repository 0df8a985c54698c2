"""The record layouts shared between producers, analysis, views and recordings.

Each layout is declared once here and registered as a stream. Producers fill them,
analysis and views read them, and recordings store them (with their dtype, so files stay
readable when a layout gains fields in a later version).

Times are CLOCK_MONOTONIC nanoseconds; ``t_ns`` is the start of an interval record and
``end_ns`` its end. Missing values: NaN (floats) or -1 (signed ints); see
:mod:`gtop.core.streams`.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from gtop.core.streams import StreamSpec, register


def _spec(name: str, doc: str, fields: list[tuple[str, str]]) -> StreamSpec:
    return register(StreamSpec(name, np.dtype([("t_ns", "<i8"), *fields]), doc))


# --- NVML / host monitoring -------------------------------------------------------------

GPU = _spec(
    "gpu",
    "one NVML sample of one GPU",
    [
        ("gpu", "<i2"),
        ("util_gpu", "<f4"),  # % of time a kernel ran, NVML's sampled utilization
        ("util_mem", "<f4"),  # % of time device memory was read or written
        ("sm_active", "<f4"),  # GPM: % SM activity
        ("sm_occupancy", "<f4"),  # GPM: % warps resident of the maximum
        ("tensor_active", "<f4"),  # GPM: % any tensor pipe active
        ("mem_used", "<i8"),  # bytes
        ("mem_total", "<i8"),  # bytes
        ("power_w", "<f4"),
        ("power_limit_w", "<f4"),
        ("temp_c", "<f4"),
        ("fan_pct", "<f4"),
        ("clock_sm_mhz", "<f4"),
        ("clock_mem_mhz", "<f4"),
        ("pcie_tx_bps", "<f4"),
        ("pcie_rx_bps", "<f4"),
        ("nvlink_tx_bps", "<f4"),
        ("nvlink_rx_bps", "<f4"),
        ("throttle", "<i8"),  # NVML clocks-event reasons bitmask
        ("ecc_corrected", "<i8"),  # volatile ECC error counts
        ("ecc_uncorrected", "<i8"),
    ],
)

PROC_GPU = _spec(
    "proc_gpu",
    "one process on one GPU: memory and NVML's per-process utilization",
    [
        ("pid", "<i4"),
        ("gpu", "<i2"),
        ("gpu_mem", "<i8"),  # bytes
        ("sm_util", "<f4"),  # %
        ("mem_util", "<f4"),
        ("enc_util", "<f4"),
        ("dec_util", "<f4"),
    ],
)

PROC_HOST = _spec(
    "proc_host",
    "one process on the host: CPU, memory, threads, I/O",
    [
        ("pid", "<i4"),
        ("cpu_pct", "<f4"),  # % of one core
        ("rss", "<i8"),  # bytes
        ("threads", "<i4"),
        ("read_bps", "<f4"),
        ("write_bps", "<f4"),
    ],
)

# --- CUPTI activity (decoded outside the target) -----------------------------------------

KERNEL = _spec(
    "kernel",
    "one kernel execution (CUPTI CONCURRENT_KERNEL)",
    [
        ("end_ns", "<i8"),
        ("queued_ns", "<i8"),
        ("submitted_ns", "<i8"),
        ("pid", "<i4"),
        ("device", "<i2"),
        ("context", "<u4"),
        ("stream", "<u4"),
        ("correlation", "<u4"),
        ("grid_x", "<i4"),
        ("grid_y", "<i4"),
        ("grid_z", "<i4"),
        ("block_x", "<i2"),
        ("block_y", "<i2"),
        ("block_z", "<i2"),
        ("registers", "<u2"),
        ("static_smem", "<i4"),
        ("dynamic_smem", "<i4"),
        ("name_id", "<u4"),  # entity kind "kernel_name"
        ("graph_id", "<u4"),
        ("graph_node_id", "<u8"),
    ],
)


class CopyKind(IntEnum):
    """CUPTI memcpy kinds (values as CUpti_ActivityMemcpyKind)."""

    UNKNOWN = 0
    HTOD = 1
    DTOH = 2
    HTOA = 3
    ATOH = 4
    ATOA = 5
    ATOD = 6
    DTOA = 7
    DTOD = 8
    HTOH = 9
    PTOP = 10


MEMCPY = _spec(
    "memcpy",
    "one memory copy (CUPTI MEMCPY)",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("device", "<i2"),
        ("context", "<u4"),
        ("stream", "<u4"),
        ("correlation", "<u4"),
        ("bytes", "<i8"),
        ("copy_kind", "<u1"),  # CopyKind
        ("src_kind", "<u1"),  # CUpti_ActivityMemoryKind
        ("dst_kind", "<u1"),
        ("graph_node_id", "<u8"),
    ],
)

MEMSET = _spec(
    "memset",
    "one memset (CUPTI MEMSET)",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("device", "<i2"),
        ("context", "<u4"),
        ("stream", "<u4"),
        ("correlation", "<u4"),
        ("bytes", "<i8"),
        ("mem_kind", "<u1"),
        ("graph_node_id", "<u8"),
    ],
)


class ApiClass(IntEnum):
    """What a CUDA runtime/driver call does, for attribution."""

    OTHER = 0
    LAUNCH = 1
    SYNC = 2
    MEMCPY = 3
    ALLOC = 4
    QUERY = 5
    GRAPH_LAUNCH = 6


API = _spec(
    "api",
    "one CUDA runtime or driver API call (CUPTI RUNTIME / DRIVER)",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("correlation", "<u4"),
        ("cbid", "<u4"),
        ("domain", "<u1"),  # 0 runtime, 1 driver
        ("api_class", "<u1"),  # ApiClass
        ("status", "<i4"),
    ],
)

SYNC = _spec(
    "sync",
    "one synchronisation (CUPTI SYNCHRONIZATION)",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("context", "<u4"),
        ("stream", "<u4"),
        ("correlation", "<u4"),
        ("sync_type", "<u1"),  # CUpti_ActivitySynchronizationType
        ("event", "<u4"),
    ],
)

MARKER = _spec(
    "marker",
    "one NVTX range or instant marker (end_ns == t_ns for an instant)",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("name_id", "<u4"),  # entity kind "marker_name"
        ("domain_id", "<u4"),
    ],
)

OVERHEAD = _spec(
    "overhead",
    "time CUPTI itself spent (CUPTI OVERHEAD)",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("overhead_kind", "<u4"),
    ],
)

UNTRACED = _spec(
    "untraced",
    "a span in which the agent traced none of pid's CUDA activity (kernel sampling's off phase)",
    [("end_ns", "<i8"), ("pid", "<i4")],
)

# --- Host threads ------------------------------------------------------------------------


class ThreadState(IntEnum):
    ON_CPU = 0
    RUNNABLE = 1
    BLOCKED = 2


class BlockReason(IntEnum):
    """Why a blocked thread was blocked (syscall class at switch-out); on an on-CPU row,
    GPU_WAIT (inside a CUDA sync call) or IO (inside an I/O syscall), else NONE."""

    NONE = 0
    IO = 1
    LOCK = 2  # futex and other locks
    SLEEP = 3
    POLL = 4  # poll/select/epoll waits
    GPU_WAIT = 5  # inside a CUDA synchronise / event wait
    OTHER = 6


THREAD_STATE = _spec(
    "thread_state",
    "one interval of one host thread in one state",
    [
        ("end_ns", "<i8"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("state", "<u1"),  # ThreadState
        # BlockReason; on-CPU/runnable rows: GPU_WAIT inside a sync call, and on-CPU rows
        # IO inside an I/O syscall (BPF tier; older recordings have NONE there)
        ("reason", "<u1"),
        ("stack_id", "<i4"),  # entity kind "stack", -1 unknown
    ],
)

CPU_SAMPLE = _spec(
    "cpu_sample",
    "one on-CPU stack sample of one host thread",
    [
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("cpu", "<i2"),
        ("stack_id", "<i4"),  # entity kind "stack"
    ],
)
