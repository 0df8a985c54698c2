"""Decode raw CUPTI activity buffers into gtop's record layouts.

A buffer is a packed sequence of records of mixed kinds; each starts with its kind (u32)
and is as long as its kind's struct. :func:`walk` finds the runs of same-kind records
(vectorised over long runs, which is what a busy buffer holds), then each kind's records
are viewed through a numpy dtype and mapped, column by column, onto the layouts in
:mod:`gtop.pipeline.layouts` with timestamps moved onto CLOCK_MONOTONIC.

Kernel and NVTX names arrive as pointers into the target's memory; :class:`NameTable`
gives each (pid, pointer) a stable id and lists the pointers the agent must resolve.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from gtop.collectors import cupti_records as rec
from gtop.collectors.cupti_clock import ClockFit
from gtop.collectors.cupti_tables import DRIVER_CBIDS, RECORD_SIZES, RUNTIME_CBIDS
from gtop.pipeline import layouts
from gtop.pipeline.layouts import ApiClass

_U32 = struct.Struct("<I")
MAX_OPEN_MARKERS = 100_000
"""NVTX ranges started and not yet ended that are remembered (oldest forgotten first)."""
FAST_RUN = 8
"""After this many same-kind records in a row, the walk checks the rest in bulk."""


@dataclass
class Run:
    kind: int
    start: int
    count: int
    stride: int


def walk(buf: bytes | memoryview, sizes: dict[int, int]) -> tuple[list[Run], int]:
    """Split a buffer into runs of same-kind records.

    Returns:
        the runs in buffer order, and how many trailing bytes could not be walked (a
        record of a kind with no known size, or a truncated record).
    """
    n = len(buf)
    words = np.frombuffer(buf, dtype="<u4", count=n // 4)
    runs: list[Run] = []
    off = 0
    while off + 4 <= n:
        kind = _U32.unpack_from(buf, off)[0]
        size = sizes.get(kind, 0)
        if size < 8 or size % 8 or off + size > n:
            break
        if runs and runs[-1].kind == kind and runs[-1].count >= FAST_RUN:
            # many in a row: check every following candidate record start at once
            cand = off + size * np.arange((n - off) // size, dtype=np.int64)
            same = words[cand >> 2] == kind
            length = int(same.argmin()) if not same.all() else len(same)
            runs[-1].count += length
            off += length * size
            continue
        if runs and runs[-1].kind == kind:
            runs[-1].count += 1
        else:
            runs.append(Run(kind, off, 1, size))
        off += size
    return runs, n - off


def gather(buf: bytes | memoryview, runs: list[Run]) -> dict[int, np.ndarray]:
    """Every record of each kind, as one array viewed through :func:`record_dtype`."""
    by_kind: dict[int, list[Run]] = {}
    for run in runs:
        by_kind.setdefault(run.kind, []).append(run)
    out = {}
    mv = memoryview(buf)
    for kind, kruns in by_kind.items():
        if kind not in rec.FIELDS or kruns[0].stride < rec.MIN_SIZES[kind]:
            continue
        stride = kruns[0].stride
        blob = b"".join(mv[r.start : r.start + r.count * stride] for r in kruns)
        out[kind] = np.frombuffer(blob, dtype=rec.record_dtype(kind, stride))
    return out


def _api_classes(names: dict[int, str]) -> np.ndarray:
    def classify(name: str) -> ApiClass:
        if "GraphLaunch" in name:
            return ApiClass.GRAPH_LAUNCH
        if "Launch" in name:
            return ApiClass.LAUNCH
        if "Synchronize" in name:
            return ApiClass.SYNC
        if "Memcpy" in name or "Memset" in name:
            return ApiClass.MEMCPY
        if re.search(
            r"Malloc|Free|MemAlloc|HostAlloc|HostRegister|HostUnregister|MemPool|MemCreate"
            r"|MemMap|MemUnmap|MemRelease|ArrayCreate|ArrayDestroy|MemAddress",
            name,
        ):
            return ApiClass.ALLOC
        if re.search(r"Get|Query|PeekAtLastError|Attribute", name):
            return ApiClass.QUERY
        return ApiClass.OTHER

    table = np.zeros(max(names) + 1, dtype=np.uint8)
    for cbid, name in names.items():
        table[cbid] = classify(name)
    return table


API_CLASS = {rec.RUNTIME: _api_classes(RUNTIME_CBIDS), rec.DRIVER: _api_classes(DRIVER_CBIDS)}
"""ApiClass per callback id, for runtime and driver records."""


def api_class(kind: int, cbid: np.ndarray) -> np.ndarray:
    table = API_CLASS[kind]
    return np.where(cbid < len(table), table[np.minimum(cbid, len(table) - 1)], ApiClass.OTHER)


class NameTable:
    """Stable ids for name pointers, per process, shared by every agent connection.

    Ids are unique across processes and name kinds (``kernel_name``, ``marker_name``).
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[int, int], tuple[int, str]] = {}
        self._next = count(1)
        self._pending: dict[int, set[int]] = {}

    def ids(self, pid: int, entity_kind: str, pointers: np.ndarray) -> np.ndarray:
        """An id for each pointer (0 for a null pointer); new pointers become pending."""
        uniq, inverse = np.unique(pointers, return_inverse=True)
        lookup = np.zeros(len(uniq), dtype=np.uint32)
        for i, ptr in enumerate(uniq.tolist()):
            if not ptr:
                continue
            known = self._ids.get((pid, ptr))
            if known is None:
                known = (next(self._next), entity_kind)
                self._ids[(pid, ptr)] = known
                self._pending.setdefault(pid, set()).add(ptr)
            lookup[i] = known[0]
        return lookup[inverse.reshape(-1)]

    def take_pending(self, pid: int) -> list[int]:
        """Pointers of ``pid`` still to be resolved by its agent (each asked once)."""
        return sorted(self._pending.pop(pid, ()))

    def resolved(self, pid: int, names: dict[int, str | None]) -> list[tuple[str, int, str]]:
        """``(entity kind, id, name)`` for each pointer the agent resolved."""
        out = []
        for ptr, name in names.items():
            known = self._ids.get((pid, ptr))
            if known is not None:
                out.append((known[1], known[0], name if name is not None else f"<0x{ptr:x}>"))
        return out


@dataclass
class Decoded:
    """One buffer, decoded."""

    batches: dict[str, np.ndarray] = field(default_factory=dict)
    records: dict[int, int] = field(default_factory=dict)
    """records walked, per CUPTI kind."""
    undecoded_bytes: int = 0


class Decoder:
    """Decodes the buffers of one process's agent."""

    def __init__(self, pid: int, names: NameTable) -> None:
        self.pid = pid
        self.names = names
        self.sizes = dict(RECORD_SIZES)
        self.clock: ClockFit | None = None
        self._open_markers: dict[int, tuple[int, int, int, int]] = {}

    def set_sizes(self, sizes: dict[int, int]) -> None:
        """Record sizes reported by the agent's libcupti override the 13.0 table."""
        self.sizes.update({int(k): int(v) for k, v in sizes.items()})

    def decode(self, buf: bytes | memoryview, clock: ClockFit) -> Decoded:
        runs, rest = walk(buf, self.sizes)
        out = Decoded(undecoded_bytes=rest)
        for run in runs:
            out.records[run.kind] = out.records.get(run.kind, 0) + run.count
        arrays = gather(buf, runs)
        for kind, arr in arrays.items():
            stream, batch = self._convert(kind, arr, clock)
            if batch is not None and len(batch):
                if stream in out.batches:
                    batch = np.concatenate([out.batches[stream], batch])
                out.batches[stream] = batch
        return out

    def _convert(self, kind: int, a: np.ndarray, clock: ClockFit) -> tuple[str, np.ndarray | None]:
        t = clock.to_mono
        if kind in (rec.CONCURRENT_KERNEL, rec.KERNEL):
            b = layouts.KERNEL.empty(len(a))
            b["t_ns"], b["end_ns"] = t(a["start"]), t(a["end"])
            b["queued_ns"], b["submitted_ns"] = t(a["queued"]), t(a["submitted"])
            b["pid"], b["device"] = self.pid, a["device_id"]
            b["context"], b["stream"] = a["context_id"], a["stream_id"]
            b["correlation"] = a["correlation_id"]
            for axis in "xyz":
                b[f"grid_{axis}"] = a[f"grid_{axis}"]
                b[f"block_{axis}"] = a[f"block_{axis}"]
            b["registers"] = a["registers"]
            b["static_smem"], b["dynamic_smem"] = (
                a["static_shared_memory"],
                a["dynamic_shared_memory"],
            )
            b["name_id"] = self.names.ids(self.pid, "kernel_name", a["name"])
            b["graph_id"], b["graph_node_id"] = a["graph_id"], a["graph_node_id"]
            return layouts.KERNEL.name, b
        if kind == rec.MEMCPY:
            b = layouts.MEMCPY.empty(len(a))
            self._gpu_common(b, a, t)
            b["bytes"] = a["bytes"]
            b["copy_kind"], b["src_kind"], b["dst_kind"] = (
                a["copy_kind"],
                a["src_kind"],
                a["dst_kind"],
            )
            b["graph_node_id"] = a["graph_node_id"]
            return layouts.MEMCPY.name, b
        if kind == rec.MEMSET:
            b = layouts.MEMSET.empty(len(a))
            self._gpu_common(b, a, t)
            b["bytes"], b["mem_kind"] = a["bytes"], a["memory_kind"]
            b["graph_node_id"] = a["graph_node_id"]
            return layouts.MEMSET.name, b
        if kind in (rec.RUNTIME, rec.DRIVER):
            b = layouts.API.empty(len(a))
            b["t_ns"], b["end_ns"] = t(a["start"]), t(a["end"])
            b["pid"], b["tid"] = self.pid, a["thread_id"]
            b["correlation"], b["cbid"] = a["correlation_id"], a["cbid"]
            b["domain"] = 0 if kind == rec.RUNTIME else 1
            b["api_class"] = api_class(kind, a["cbid"])
            b["status"] = a["return_value"]
            return layouts.API.name, b
        if kind == rec.SYNCHRONIZATION:
            b = layouts.SYNC.empty(len(a))
            b["t_ns"], b["end_ns"] = t(a["start"]), t(a["end"])
            b["pid"], b["context"], b["stream"] = self.pid, a["context_id"], a["stream_id"]
            b["correlation"], b["sync_type"] = a["correlation_id"], a["type"]
            b["event"] = a["cuda_event_id"]
            return layouts.SYNC.name, b
        if kind == rec.OVERHEAD:
            b = layouts.OVERHEAD.empty(len(a))
            b["t_ns"], b["end_ns"] = t(a["start"]), t(a["end"])
            b["pid"] = self.pid
            threaded = a["object_kind"] == rec.OBJECT_THREAD
            b["tid"] = np.where(threaded, a["object_tid"], -1)
            b["overhead_kind"] = a["overhead_kind"]
            return layouts.OVERHEAD.name, b
        if kind == rec.MARKER:
            return layouts.MARKER.name, self._markers(a, t)
        return "", None

    def _gpu_common(self, b: np.ndarray, a: np.ndarray, t: Callable) -> None:
        b["t_ns"], b["end_ns"] = t(a["start"]), t(a["end"])
        b["pid"], b["device"] = self.pid, a["device_id"]
        b["context"], b["stream"] = a["context_id"], a["stream_id"]
        b["correlation"] = a["correlation_id"]

    def _markers(self, a: np.ndarray, t: Callable) -> np.ndarray:
        """Pair NVTX start/end records by id; instants become zero-length rows."""
        ts = t(a["timestamp"])
        name_ids = self.names.ids(self.pid, "marker_name", a["name"])
        domain_ids = self.names.ids(self.pid, "marker_name", a["domain"])
        tids = np.where(a["object_kind"] == rec.OBJECT_THREAD, a["object_tid"], -1)
        rows = []
        for i, flags in enumerate(a["flags"].tolist()):
            mid = int(a["id"][i])
            if flags & rec.MARKER_INSTANT:
                rows.append((ts[i], ts[i], name_ids[i], domain_ids[i], tids[i]))
            elif flags & rec.MARKER_START:
                if len(self._open_markers) >= MAX_OPEN_MARKERS:  # ranges never closed
                    self._open_markers.pop(next(iter(self._open_markers)))
                self._open_markers[mid] = (ts[i], name_ids[i], domain_ids[i], tids[i])
            elif flags & rec.MARKER_END and mid in self._open_markers:
                start, name_id, domain_id, tid = self._open_markers.pop(mid)
                rows.append((start, ts[i], name_id, domain_id, tid))
        b = layouts.MARKER.empty(len(rows))
        if rows:
            cols = np.array(rows, dtype=np.int64)
            b["t_ns"], b["end_ns"] = cols[:, 0], cols[:, 1]
            b["name_id"], b["domain_id"], b["tid"] = cols[:, 2], cols[:, 3], cols[:, 4]
            b["pid"] = self.pid
        return b
