"""Where gtop reads each field of a raw CUPTI activity record.

Offsets are those of libcupti 13.0's record structs (``CUpti_ActivityKernel10``,
``CUpti_ActivityMemcpy6``, ``CUpti_ActivityMemset4``, ``CUpti_ActivityAPI``,
``CUpti_ActivitySynchronization2``, ``CUpti_ActivityMarker2``,
``CUpti_ActivityOverhead3``, ``CUpti_ActivityGraphTrace2``). Later CUPTI versions only
append fields, so the offsets hold for them too; only the record size (the stride in a
buffer) differs, and it comes from the agent (``cuptiActivityGetStructSize``) or from
:data:`gtop.cupti.tables.RECORD_SIZES`. ``tests/agent`` checks every offset against the
CUPTI 13.0 headers.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from gtop.cupti.tables import KIND_NAMES

_KIND = {name: kind for kind, name in KIND_NAMES.items()}
MEMCPY = _KIND["MEMCPY"]
MEMSET = _KIND["MEMSET"]
DRIVER = _KIND["DRIVER"]
RUNTIME = _KIND["RUNTIME"]
CONCURRENT_KERNEL = _KIND["CONCURRENT_KERNEL"]
KERNEL = _KIND["KERNEL"]
MARKER = _KIND["MARKER"]
OVERHEAD = _KIND["OVERHEAD"]
SYNCHRONIZATION = _KIND["SYNCHRONIZATION"]
GRAPH_TRACE = _KIND["GRAPH_TRACE"]

FIELDS: dict[int, dict[str, tuple[str, int]]] = {
    CONCURRENT_KERNEL: {
        "registers": ("<u2", 6),
        "start": ("<u8", 16),
        "end": ("<u8", 24),
        "device_id": ("<u4", 40),
        "context_id": ("<u4", 44),
        "stream_id": ("<u4", 48),
        "grid_x": ("<i4", 52),
        "grid_y": ("<i4", 56),
        "grid_z": ("<i4", 60),
        "block_x": ("<i4", 64),
        "block_y": ("<i4", 68),
        "block_z": ("<i4", 72),
        "static_shared_memory": ("<i4", 76),
        "dynamic_shared_memory": ("<i4", 80),
        "correlation_id": ("<u4", 92),
        "name": ("<u8", 104),
        "queued": ("<u8", 120),
        "submitted": ("<u8", 128),
        "graph_node_id": ("<u8", 144),
        "graph_id": ("<u4", 156),
    },
    MEMCPY: {
        "copy_kind": ("u1", 4),
        "src_kind": ("u1", 5),
        "dst_kind": ("u1", 6),
        "bytes": ("<u8", 8),
        "start": ("<u8", 16),
        "end": ("<u8", 24),
        "device_id": ("<u4", 32),
        "context_id": ("<u4", 36),
        "stream_id": ("<u4", 40),
        "correlation_id": ("<u4", 44),
        "graph_node_id": ("<u8", 64),
    },
    MEMSET: {
        "bytes": ("<u8", 8),
        "start": ("<u8", 16),
        "end": ("<u8", 24),
        "device_id": ("<u4", 32),
        "context_id": ("<u4", 36),
        "stream_id": ("<u4", 40),
        "correlation_id": ("<u4", 44),
        "memory_kind": ("<u2", 50),
        "graph_node_id": ("<u8", 64),
    },
    RUNTIME: {
        "cbid": ("<u4", 4),
        "start": ("<u8", 8),
        "end": ("<u8", 16),
        "process_id": ("<u4", 24),
        "thread_id": ("<u4", 28),
        "correlation_id": ("<u4", 32),
        "return_value": ("<u4", 36),
    },
    SYNCHRONIZATION: {
        "type": ("<i4", 4),
        "start": ("<u8", 8),
        "end": ("<u8", 16),
        "correlation_id": ("<u4", 24),
        "context_id": ("<u4", 28),
        "stream_id": ("<u4", 32),
        "cuda_event_id": ("<u4", 36),
    },
    MARKER: {
        "flags": ("<i4", 4),
        "timestamp": ("<u8", 8),
        "id": ("<u4", 16),
        "object_kind": ("<i4", 20),
        "object_pid": ("<u4", 24),
        "object_tid": ("<u4", 28),
        "name": ("<u8", 40),
        "domain": ("<u8", 48),
    },
    OVERHEAD: {
        "overhead_kind": ("<i4", 4),
        "object_kind": ("<i4", 8),
        "object_pid": ("<u4", 12),
        "object_tid": ("<u4", 16),
        "start": ("<u8", 24),
        "end": ("<u8", 32),
        "correlation_id": ("<u4", 40),
    },
    GRAPH_TRACE: {
        "correlation_id": ("<u4", 4),
        "start": ("<u8", 8),
        "end": ("<u8", 16),
        "device_id": ("<u4", 24),
        "graph_id": ("<u4", 28),
        "context_id": ("<u4", 32),
        "stream_id": ("<u4", 36),
    },
}
FIELDS[KERNEL] = FIELDS[CONCURRENT_KERNEL]
FIELDS[DRIVER] = FIELDS[RUNTIME]

MIN_SIZES = {
    kind: max(off + np.dtype(fmt).itemsize for fmt, off in f.values()) for kind, f in FIELDS.items()
}
"""The smallest record that holds every field gtop reads."""

OBJECT_THREAD = 2
MARKER_INSTANT = 1
MARKER_START = 2
MARKER_END = 4


@cache
def record_dtype(kind: int, stride: int) -> np.dtype:
    """A numpy view of a record of ``kind`` that is ``stride`` bytes long."""
    fields = FIELDS[kind]
    return np.dtype(
        {
            "names": list(fields),
            "formats": [f for f, _ in fields.values()],
            "offsets": [o for _, o in fields.values()],
            "itemsize": stride,
        }
    )
