"""Decode raw CUPTI activity buffers into gtop's record layouts.

A buffer is a packed sequence of records of mixed kinds; each starts with its kind (u32)
and is as long as its kind's struct. :func:`walk` finds the runs of same-kind records
(vectorised over long runs, which is what a busy buffer holds), then each kind's records
are viewed through a numpy dtype and mapped, column by column, onto the layouts in
:mod:`gtop.core.layouts` with timestamps moved onto CLOCK_MONOTONIC.

Kernel and NVTX names arrive as pointers into the target's memory; :class:`NameTable`
gives each (pid, pointer) a stable id and lists the pointers the agent must resolve.

A CUDA graph launch traced at graph level (GRAPH_TRACE) becomes one ``kernel`` row
spanning the whole graph on the GPU, with its ``graph_id`` set and ``graph_node_id`` 0
(a node traced on its own has a node id), named ``CUDA graph <id>``: on-GPU time,
kernel tables and timelines then count graph replays without knowing about them.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from gtop.core import layouts
from gtop.core.layouts import ApiClass
from gtop.cupti import records as rec
from gtop.cupti.clock import ClockFit
from gtop.cupti.tables import DRIVER_CBIDS, RECORD_SIZES, RUNTIME_CBIDS

_U32 = struct.Struct("<I")
MAX_OPEN_MARKERS = 100_000
"""NVTX ranges started and not yet ended that are remembered (oldest forgotten first)."""
MAX_PERIOD = 4
"""Longest repeating pattern of record kinds (e.g. runtime API, driver API, kernel) that
the walk recognises and then checks in bulk."""
MIN_REPS = 8
"""Repetitions a pattern must continue for to be taken in bulk."""
COOLDOWN = 16
"""Records walked one by one after a failed bulk attempt before the next attempt."""
LOOK_EVERY = 4
"""Records walked one by one between looks for a repeating pattern."""
GRAPH_NAME = "CUDA graph "
"""Kernel-name prefix of a whole CUDA graph launch traced at graph level."""


@dataclass
class Run:
    """``count`` records of one kind, ``step`` bytes apart, the first at ``start``."""

    kind: int
    start: int
    count: int
    size: int
    step: int


def walk(buf: bytes | memoryview, sizes: dict[int, int]) -> tuple[list[Run], int]:
    """Find every record in a buffer, as runs of evenly spaced same-kind records.

    Records are walked one by one until the kinds repeat with a period of up to
    :data:`MAX_PERIOD`; then the rest of the buffer is checked in bulk for that pattern.
    This is exact: a record's kind fixes its size, so if every expected position holds
    the expected kind, those positions are the records.

    Returns:
        the runs, and how many trailing bytes could not be walked (a record of a kind
        with no known size, or a truncated record).
    """
    n = len(buf)
    words = np.frombuffer(buf, dtype="<u4", count=n // 4)
    runs: list[Run] = []
    recent: list[int] = []  # kinds walked one by one since the last bulk step
    wait = 0  # records to walk before the next look for a pattern
    off = 0
    last: Run | None = None
    while off + 4 <= n:
        kind = _U32.unpack_from(buf, off)[0]
        size = sizes.get(kind, 0)
        if size < 8 or size % 8 or off + size > n:
            break
        recent.append(kind)
        wait -= 1
        if wait <= 0:
            wait = LOOK_EVERY
            bulk = _bulk(words, n, off, recent[-2 * MAX_PERIOD - 1 :], sizes)
            if bulk:
                runs += bulk
                off = bulk[0].start + bulk[0].count * bulk[0].step
                recent, last = [], None
                continue
            if bulk is not None:  # a pattern that stops soon: walk a while first
                wait = COOLDOWN
            if len(recent) > 256:
                del recent[: -2 * MAX_PERIOD]
        if last is not None and last.kind == kind and last.start + last.count * size == off:
            last.count += 1
        else:
            last = Run(kind, off, 1, size, size)
            runs.append(last)
        off += size
    return runs, n - off


def _bulk(
    words: np.ndarray, n: int, off: int, recent: list[int], sizes: dict[int, int]
) -> list[Run] | None:
    """Runs covering every whole repetition, from ``off`` on, of a pattern the recent
    kinds repeat: None when they repeat no pattern, empty when the patterns they repeat
    do not go on for :data:`MIN_REPS` more repetitions.

    ``recent`` ends with the kind of the record at ``off``, which must continue the
    pattern (it is one period after its twin).
    """
    found: list[Run] | None = None
    for period in range(1, MAX_PERIOD + 1):
        # the last 2*period walked kinds repeat, and the current one starts the next period
        if len(recent) < 2 * period + 1 or recent[-1] != recent[-1 - period]:
            continue
        pattern = recent[-1 - period : -1]
        if pattern != recent[-1 - 2 * period : -1 - period]:
            continue
        found = []
        lengths = [sizes[k] for k in pattern]
        count = _repetitions(words, n, off, pattern, lengths)
        if count < MIN_REPS:
            continue
        out, prefix, stride = [], 0, sum(lengths)
        for kind, length in zip(pattern, lengths, strict=True):
            out.append(Run(kind, off + prefix, count, length, stride))
            prefix += length
        return out
    return found


def _repetitions(
    words: np.ndarray, n: int, off: int, pattern: list[int], lengths: list[int]
) -> int:
    """How many whole repetitions of ``pattern`` start at ``off``, checked in chunks that
    grow eightfold, so the work stays proportional to the answer."""
    stride = sum(lengths)
    total = (n - off) // stride
    done, chunk = 0, MIN_REPS
    while done < total:
        reps = min(chunk, total - done)
        base = off + stride * (done + np.arange(reps, dtype=np.int64))
        ok = np.ones(reps, dtype=bool)
        prefix = 0
        for kind, length in zip(pattern, lengths, strict=True):
            ok &= words[(base + prefix) >> 2] == kind
            prefix += length
        if not ok.all():
            return done + int(ok.argmin())
        done += reps
        chunk *= 8
    return done


def gather(buf: bytes | memoryview, runs: list[Run]) -> dict[int, np.ndarray]:
    """Every record of each kind as one array viewed through :func:`record_dtype` (in
    buffer order within each run; callers order rows by time)."""
    mv = memoryview(buf)
    chunks: dict[int, list[bytes | memoryview]] = {}
    for r in runs:
        if r.kind not in rec.FIELDS or r.size < rec.MIN_SIZES[r.kind]:
            continue
        if r.step == r.size:
            chunk: bytes | memoryview = mv[r.start : r.start + r.count * r.size]
        else:
            raw = np.ndarray(
                (r.count, r.size),
                dtype=np.uint8,
                buffer=buf,
                offset=r.start,
                strides=(r.step, 1),
            )
            chunk = raw.tobytes()
        chunks.setdefault(r.kind, []).append(chunk)
    sizes = {r.kind: r.size for r in runs}
    return {
        kind: np.frombuffer(b"".join(parts), dtype=rec.record_dtype(kind, sizes[kind]))
        for kind, parts in chunks.items()
    }


def _api_classes(names: dict[int, str]) -> np.ndarray:
    def classify(name: str) -> ApiClass:
        if "GraphLaunch" in name:
            return ApiClass.GRAPH_LAUNCH
        if "Launch" in name:
            return ApiClass.LAUNCH
        if "Synchronize" in name or ("Memcpy" in name and "Async" not in name):
            return ApiClass.SYNC  # a blocking copy waits for the stream, as .cpu() does
        if "Memcpy" in name or "Memset" in name:
            return ApiClass.MEMCPY
        if re.search(
            r"Malloc|Free|MemAlloc|HostAlloc|HostRegister|HostUnregister|MemPool|MemCreate"
            r"|MemMap|MemUnmap|MemRelease|ArrayCreate|ArrayDestroy|MemAddress",
            name,
        ):
            return ApiClass.ALLOC
        if "Query" in name:  # a poll: a loop of them waits for the GPU
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


def current_classes(domain: np.ndarray, cbid: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """Each call's class as this version classifies it (``domain`` 0 runtime, 1 driver),
    so recordings made before a class changed read with today's; ``stored`` where the
    callback id is CUPTI's invalid 0."""
    out = np.array(stored, dtype=np.uint8, copy=True)
    for dom, kind in ((0, rec.RUNTIME), (1, rec.DRIVER)):
        mine = (domain == dom) & (cbid > 0)
        if mine.any():
            out[mine] = api_class(kind, cbid[mine])
    return out


def _thread_ids(a: np.ndarray) -> np.ndarray:
    """Thread id of each OVERHEAD/MARKER record (int64; -1 when its object is a process).

    ``object_tid`` is uint32: mixed with -1 it must be widened first. Depending on the
    numpy version, ``np.where(mask, uint32_array, -1)`` either raises OverflowError (it
    killed the link on the GPU machine) or silently gives 4294967295.
    """
    threaded = a["object_kind"] == rec.OBJECT_THREAD
    return np.where(threaded, a["object_tid"].astype(np.int64), np.int64(-1))


class NameTable:
    """Stable ids for name pointers, per owner (a process, or one agent session of it),
    shared by every agent connection. The ``pid`` arguments name that owner.

    Ids are unique across processes and name kinds (``kernel_name``, ``marker_name``).
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[int, int], tuple[int, str]] = {}
        self._next = count(1)
        self._pending: dict[int, set[int]] = {}
        self._labels: dict[tuple[int, str], int] = {}

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

    def label(self, pid: int, entity_kind: str, text: str) -> tuple[int, bool]:
        """A stable id for a name gtop makes itself (no pointer to resolve), and whether
        it is new (its entity is then still to be published)."""
        key = (pid, text)
        known = self._labels.get(key)
        if known is not None:
            return known, False
        self._labels[key] = ident = next(self._next)
        return ident, True

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
    incomplete: int = 0
    """kernels, copies and memsets without an end time (delivered by a forced flush), and
    ones without a start time (an agent attached to a running process got
    kernels with start 0 on an H200): those are left out, since they cannot be placed."""
    names: list[tuple[str, int, str]] = field(default_factory=list)
    """``(entity kind, id, name)`` of names first made in this buffer (CUDA graphs)."""


class Decoder:
    """Decodes the buffers of one process's agent."""

    def __init__(self, pid: int, names: NameTable, session: int | None = None) -> None:
        self.pid = pid
        self.names = names
        self.session = pid if session is None else session
        """Owner of this decoder's name pointers in ``names``: one per agent session,
        because CUPTI frees its name strings when a session finalises it (a pointer may
        hold another name in the next session, and a pid may be reused)."""
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
            if kind == rec.GRAPH_TRACE:
                stream, batch = layouts.KERNEL.name, self._graphs(arr, clock, out.names)
            else:
                stream, batch = self._convert(kind, arr, clock)
            if batch is not None and len(batch):
                if stream in out.batches:
                    batch = np.concatenate([out.batches[stream], batch])
                out.batches[stream] = batch
        for stream in ("kernel", "memcpy", "memset"):
            batch = out.batches.get(stream)
            if batch is None:
                continue
            placed = batch["t_ns"] != -1  # to_mono's "unknown" (CUPTI's 0)
            if not placed.all():  # no start time: nowhere to put it
                out.incomplete += int((~placed).sum())
                out.batches[stream] = batch = batch[placed]
            out.incomplete += int((batch["end_ns"] < 0).sum())
        for stream, batch in out.batches.items():  # streams are ordered by t_ns
            t = batch["t_ns"]
            if len(t) > 1 and (t[1:] < t[:-1]).any():
                out.batches[stream] = batch[np.argsort(t, kind="stable")]
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
            b["name_id"] = self.names.ids(self.session, "kernel_name", a["name"])
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
            b["tid"] = _thread_ids(a)
            b["overhead_kind"] = a["overhead_kind"]
            return layouts.OVERHEAD.name, b
        if kind == rec.MARKER:
            return layouts.MARKER.name, self._markers(a, t)
        return "", None

    def _graphs(
        self, a: np.ndarray, clock: ClockFit, new_names: list[tuple[str, int, str]]
    ) -> np.ndarray:
        """Graph launches as ``kernel`` rows named ``CUDA graph <id>`` (node id 0)."""
        b = layouts.KERNEL.empty(len(a))
        self._gpu_common(b, a, clock.to_mono)
        b["graph_id"] = a["graph_id"]
        graph_ids, inverse = np.unique(a["graph_id"], return_inverse=True)
        name_ids = np.zeros(len(graph_ids), dtype=np.uint32)
        for i, graph in enumerate(graph_ids.tolist()):
            text = f"{GRAPH_NAME}{graph}"
            name_ids[i], new = self.names.label(self.session, "kernel_name", text)
            if new:
                new_names.append(("kernel_name", int(name_ids[i]), text))
        b["name_id"] = name_ids[inverse.reshape(-1)]
        return b

    def _gpu_common(self, b: np.ndarray, a: np.ndarray, t: Callable) -> None:
        b["t_ns"], b["end_ns"] = t(a["start"]), t(a["end"])
        b["pid"], b["device"] = self.pid, a["device_id"]
        b["context"], b["stream"] = a["context_id"], a["stream_id"]
        b["correlation"] = a["correlation_id"]

    def _markers(self, a: np.ndarray, t: Callable) -> np.ndarray:
        """Pair NVTX start/end records by id; instants become zero-length rows."""
        ts = t(a["timestamp"])
        name_ids = self.names.ids(self.session, "marker_name", a["name"])
        domain_ids = self.names.ids(self.session, "marker_name", a["domain"])
        tids = _thread_ids(a)
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
