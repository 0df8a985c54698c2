"""A recording as timeline tracks: slice tables and counter series, with readable names.

The trace exporters (Perfetto, Chrome, Kineto) serialise these; none reads streams
itself, so all show the same tracks with the same names. Slices come in four families
(GPU work, CUDA API calls and NVTX ranges, thread states, and the spans kernel sampling
left untraced: a track per process), each read in time windows of
about :data:`WINDOW_ROWS` rows, so memory is bounded by the window, not the recording.

Within a window the slices are sorted per track by start (longest first on ties), and a
slice that starts inside another (of this window or an earlier one) but ends after it is
cut at the other's end, so every track is a proper stack of nested slices: what a
begin/end trace format needs. Writing windows in order keeps each track's events in the
order trace_processor pairs them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from gtop.analysis.attribution import untraced
from gtop.analysis.attribution.causes import PHRASES, Cause
from gtop.analysis.kernels.cuda_activity import api_name
from gtop.analysis.kernels.demangle import demangle
from gtop.core.layouts import BlockReason, CopyKind, ThreadState
from gtop.recordings.reader import Recording

WINDOW_ROWS = 1 << 16
"""Rows of one family read and sorted at once."""

GPU_PID = 1_000_000_000
"""Synthetic pid for GPU lanes (plus the device index), above any real pid."""

CATEGORIES = (
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "cuda_runtime",
    "cuda_driver",
    "user_annotation",
    "thread_state",
    "not_traced",
)
"""Slice categories, named as PyTorch's profiler (Kineto) names them where it has them."""
KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, ANNOTATION, STATE, NOT_TRACED = range(len(CATEGORIES))


@dataclass(frozen=True)
class Track:
    """One timeline row. ``pid``/``tid`` are real ids for host threads; a GPU stream is
    ``(GPU_PID + device, stream)``; a thread's state row and counters have ``tid`` 0 or
    the thread's id with ``kind`` telling them apart."""

    index: int
    kind: str  # "thread", "state", "stream", "counter" or "untraced" (one per process)
    pid: int
    tid: int
    name: str
    unit: str = ""


@dataclass
class Names:
    """Interned strings: each distinct name gets an index once."""

    strings: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    def add(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.strings)
            self.strings.append(text)
        return i


class Tracks:
    """The tracks made so far, and what names processes and threads have."""

    def __init__(self, rec: Recording) -> None:
        self.all: list[Track] = []
        self._by_key: dict[tuple, Track] = {}
        self.threads = {int(e.key): str(e.value.get("name") or "") for e in rec.entities("thread")}
        self.processes: dict[int, dict] = {}
        for e in rec.entities("process"):
            self.processes[int(e.key)] = e.value
        self.devices = {int(e.key): e.value for e in rec.entities("device")}
        self.kernels = {
            int(e.key): demangle(str(e.value.get("name"))) for e in rec.entities("kernel_name")
        }
        self.markers = {int(e.key): str(e.value.get("name")) for e in rec.entities("marker_name")}
        self.end = rec.time_range()[1] + 1
        """Where an untraced span still open at the recording's end ends."""

    def get(self, kind: str, pid: int, tid: int, name: str = "", unit: str = "") -> Track:
        key = (kind, pid, tid, name)
        track = self._by_key.get(key)
        if track is None:
            if not name:
                names = {"thread": self.thread_name(tid), "state": f"{self.thread_name(tid)} state"}
                name = names.get(kind, f"stream {tid}")
            track = Track(len(self.all), kind, pid, tid, name, unit)
            self._by_key[key] = track
            self.all.append(track)
        return track

    def thread_name(self, tid: int) -> str:
        name = self.threads.get(tid)
        return f"{name} ({tid})" if name else f"thread {tid}"

    def process_name(self, pid: int) -> str:
        if pid >= GPU_PID:
            device = self.devices.get(pid - GPU_PID, {})
            return f"GPU {pid - GPU_PID}" + (f" {device['name']}" if device.get("name") else "")
        name = self.processes.get(pid, {}).get("name")
        return f"{name} ({pid})" if name else f"pid {pid}"

    def cmdline(self, pid: int) -> list[str]:
        return [str(a) for a in self.processes.get(pid, {}).get("cmdline") or []]


@dataclass
class SliceTable:
    """Slices of one family, sorted by (track, start, -end) and properly nested per track.

    ``name`` indexes :attr:`Names.strings`, ``category`` :data:`CATEGORIES`; ``flow`` is
    the CUPTI correlation joined with the pid (0: none), the same on a launching API call
    and the GPU work it launched; ``args`` holds per-slice integers (-1: absent).
    """

    track: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    category: np.ndarray
    flow: np.ndarray
    args: dict[str, np.ndarray]
    clipped: int = 0

    def __len__(self) -> int:
        return len(self.start)

    def track_runs(self) -> Iterator[tuple[int, int, int]]:
        """(track index, first row, end row) of each track's run of rows."""
        if not len(self.track):
            return
        heads = np.flatnonzero(np.diff(self.track, prepend=-1) != 0)
        ends = np.append(heads[1:], len(self.track))
        yield from zip(self.track[heads].tolist(), heads.tolist(), ends.tolist())


def distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (numpy 2's hash-based ``np.unique`` takes seconds on a
    million distinct 64-bit keys; a sort takes a tenth of that)."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _flow_key(pid: np.ndarray, correlation: np.ndarray) -> np.ndarray:
    corr = correlation.astype(np.uint64)
    return np.where(corr > 0, (pid.astype(np.uint64) << np.uint64(32)) | corr, np.uint64(0))


def _nest(start: np.ndarray, end: np.ndarray, stack: list[int]) -> int:
    """Cut each slice that outlives the slice it starts in at that slice's end (rows of
    one track, sorted by start, longest first); ``stack``: the ends of the slices still
    open from earlier windows, updated. Returns how many were cut."""
    if not len(start):
        return 0
    if (not stack or stack[-1] <= start[0]) and bool(np.all(start[1:] >= end[:-1])):
        stack[:] = [int(end[-1])]  # one after another: only the last can still be open
        return 0
    cut = 0
    ends = end.tolist()
    for i, s in enumerate(start.tolist()):
        while stack and stack[-1] <= s:
            stack.pop()
        if stack and ends[i] > stack[-1]:
            ends[i] = stack[-1]
            cut += 1
        stack.append(ends[i])
    end[:] = ends
    return cut


def _table(parts: list[dict[str, np.ndarray]], open_ends: dict[int, list[int]]) -> SliceTable:
    keys = parts[0].keys()
    cols = {k: np.concatenate([p[k] for p in parts]) for k in keys}
    end = np.maximum(cols["end"], cols["start"])
    order = np.lexsort((-end, cols["start"], cols["track"]))
    cols = {k: v[order] for k, v in cols.items()}
    end = end[order]
    table = SliceTable(
        cols.pop("track").astype(np.int32),
        cols.pop("start").astype(np.int64),
        end.astype(np.int64),
        cols.pop("name").astype(np.int32),
        cols.pop("category").astype(np.uint8),
        cols.pop("flow").astype(np.uint64),
        {},
    )
    cols.pop("end")
    table.args = cols
    for track, a, b in table.track_runs():
        stack = open_ends.setdefault(track, [])
        table.clipped += _nest(table.start[a:b], table.end[a:b], stack)
    return table


def _lookup(keys: np.ndarray, name_of: dict[int, int]) -> np.ndarray:
    uniq, inverse = np.unique(keys, return_inverse=True)
    return np.array([name_of[int(u)] for u in uniq.tolist()], np.int32)[inverse]


def _tracks_for(tracks: Tracks, kind: str, pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    pairs = (pid.astype(np.int64) << 32) | (tid.astype(np.int64) & 0xFFFFFFFF)
    table = {}
    for p in distinct(pairs).tolist():
        table[p] = tracks.get(kind, p >> 32, int(np.int32(np.uint32(p & 0xFFFFFFFF)))).index
    return _lookup(pairs, table)


def _absent(n: int) -> np.ndarray:
    return np.full(n, -1, np.int64)


Window = dict[str, np.ndarray]
"""One time window's rows of a family's streams (those the recording has)."""


def gpu_slices(window: Window, tracks: Tracks, names: Names) -> list[dict[str, np.ndarray]]:
    """Kernels, copies and memsets on their GPU stream tracks."""
    parts = []
    for stream, category in (("kernel", KERNEL), ("memcpy", MEMCPY), ("memset", MEMSET)):
        rows = window.get(stream)
        if rows is None or not len(rows):
            continue
        n = len(rows)
        if stream == "kernel":
            ids = rows["name_id"].astype(np.int64)
            name_of = {
                i: names.add(tracks.kernels.get(i, f"kernel {i}")) for i in distinct(ids).tolist()
            }
            name = _lookup(ids, name_of)
        elif stream == "memcpy":
            kinds = {
                int(k): names.add(f"Memcpy {_copy_kind(int(k))}")
                for k in distinct(rows["copy_kind"]).tolist()
            }
            name = _lookup(rows["copy_kind"].astype(np.int64), kinds)
        else:
            name = np.full(n, names.add("Memset"), np.int32)
        args = {k: _absent(n) for k in GPU_ARGS}
        args["device"] = rows["device"].astype(np.int64)
        args["stream"] = rows["stream"].astype(np.int64)
        args["correlation"] = rows["correlation"].astype(np.int64)
        if stream == "kernel":
            for axis in "xyz":
                args[f"grid_{axis}"] = rows[f"grid_{axis}"].astype(np.int64)
                args[f"block_{axis}"] = rows[f"block_{axis}"].astype(np.int64)
            args["registers"] = rows["registers"].astype(np.int64)
            args["shared_memory_B"] = rows["static_smem"].astype(np.int64) + rows["dynamic_smem"]
        else:
            args["bytes"] = rows["bytes"].astype(np.int64)
        track = np.empty(n, np.int32)
        for (device, s), mask in _groups(rows["device"], rows["stream"]):
            track[mask] = tracks.get("stream", GPU_PID + device, s).index
        parts.append(
            {
                "track": track,
                "start": rows["t_ns"],
                "end": rows["end_ns"],
                "name": name,
                "category": np.full(n, category, np.uint8),
                "flow": _flow_key(rows["pid"], rows["correlation"]),
                **args,
            }
        )
    return parts


GPU_ARGS = (
    "device",
    "stream",
    "correlation",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers",
    "shared_memory_B",
    "bytes",
)


def _copy_kind(kind: int) -> str:
    return CopyKind(kind).name if kind in CopyKind._value2member_map_ else f"kind {kind}"


def _groups(a: np.ndarray, b: np.ndarray) -> Iterator[tuple[tuple[int, int], np.ndarray]]:
    pairs = (a.astype(np.int64) << 32) | b.astype(np.int64)
    for p in distinct(pairs).tolist():
        yield (p >> 32, p & 0xFFFFFFFF), pairs == p


def host_slices(window: Window, tracks: Tracks, names: Names) -> list[dict[str, np.ndarray]]:
    """CUDA runtime/driver calls (named by function) and NVTX ranges on thread tracks."""
    parts = []
    rows = window.get("api")
    if rows is not None and len(rows):
        fn = (rows["domain"].astype(np.int64) << 32) | rows["cbid"]
        name_of = {int(k): names.add(api_name(k >> 32, k & 0xFFFFFFFF)) for k in distinct(fn)}
        parts.append(
            {
                "track": _tracks_for(tracks, "thread", rows["pid"], rows["tid"]),
                "start": rows["t_ns"],
                "end": rows["end_ns"],
                "name": _lookup(fn, name_of),
                "category": np.where(rows["domain"] == 0, RUNTIME, DRIVER).astype(np.uint8),
                "flow": _flow_key(rows["pid"], rows["correlation"]),
                "correlation": rows["correlation"].astype(np.int64),
                "cbid": rows["cbid"].astype(np.int64),
            }
        )
    rows = window.get("marker")
    if rows is not None and len(rows):
        ids = rows["name_id"].astype(np.int64)
        marks = tracks.markers
        name_of = {int(i): names.add(marks.get(int(i), f"marker {i}")) for i in distinct(ids)}
        n = len(rows)
        parts.append(
            {
                "track": _tracks_for(tracks, "thread", rows["pid"], rows["tid"]),
                "start": rows["t_ns"],
                "end": rows["end_ns"],
                "name": _lookup(ids, name_of),
                "category": np.full(n, ANNOTATION, np.uint8),
                "flow": np.zeros(n, np.uint64),
                "correlation": _absent(n),
                "cbid": _absent(n),
            }
        )
    return parts


def state_label(state: int, reason: int) -> str:
    """A thread-state slice's name: ``on-CPU``, ``on-CPU: gpu_wait``, ``runnable``,
    ``blocked: io`` …"""
    why = BlockReason(reason).name.lower() if reason in BlockReason._value2member_map_ else "?"
    if state == ThreadState.BLOCKED:
        return f"blocked: {why}"
    base = "on-CPU" if state == ThreadState.ON_CPU else "runnable"
    return f"{base}: {why}" if reason != BlockReason.NONE else base


def state_slices(window: Window, tracks: Tracks, names: Names) -> list[dict[str, np.ndarray]]:
    """Host thread states (on-CPU, runnable, blocked and why), one row per thread."""
    rows = window.get("thread_state")
    if rows is None or not len(rows):
        return []
    key = rows["state"].astype(np.int64) << 8 | rows["reason"]
    name_of = {int(k): names.add(state_label(k >> 8, k & 0xFF)) for k in distinct(key)}
    n = len(rows)
    return [
        {
            "track": _tracks_for(tracks, "state", rows["pid"], rows["tid"]),
            "start": rows["t_ns"],
            "end": rows["end_ns"],
            "name": _lookup(key, name_of),
            "category": np.full(n, STATE, np.uint8),
            "flow": np.zeros(n, np.uint64),
            "stack_id": rows["stack_id"].astype(np.int64),
        }
    ]


def untraced_slices(window: Window, tracks: Tracks, names: Names) -> list[dict[str, np.ndarray]]:
    """Kernel sampling's off phases (:mod:`gtop.analysis.attribution.untraced`), on a track of each
    process: time its GPU work was not traced, which a gap in its streams is not."""
    rows = window.get("untraced")
    if rows is None or not len(rows):
        return []
    parts = []
    name = names.add(PHRASES[Cause.NOT_TRACED])
    for pid, spans in untraced.spans_by_pid(untraced.from_stream(rows), tracks.end).items():
        n = len(spans)
        parts.append(
            {
                "track": np.full(n, tracks.get("untraced", pid, 0, "CUDA not traced").index),
                "start": spans.starts,
                "end": spans.ends,
                "name": np.full(n, name, np.int32),
                "category": np.full(n, NOT_TRACED, np.uint8),
                "flow": np.zeros(n, np.uint64),
            }
        )
    return parts


FAMILIES = {
    "gpu": (("kernel", "memcpy", "memset"), gpu_slices),
    "host": (("api", "marker"), host_slices),
    "state": (("thread_state",), state_slices),
    "untraced": (("untraced",), untraced_slices),
}


def windows(rec: Recording, streams: list[str]) -> list[tuple[int, int]]:
    """Time windows ``[t0, t1)`` over ``streams`` holding about :data:`WINDOW_ROWS` rows
    each, cut at chunk starts."""
    chunks = sorted((c for s in streams for c in rec.chunks(s)), key=lambda c: c.t_first)
    if not chunks:
        return []
    edges, rows = [chunks[0].t_first], 0
    for chunk in chunks:
        if rows >= WINDOW_ROWS and chunk.t_first > edges[-1]:
            edges.append(chunk.t_first)
            rows = 0
        rows += chunk.n
    edges.append(max(c.t_last for c in chunks) + 1)
    return list(itertools.pairwise(edges))


def slice_tables(
    rec: Recording,
    tracks: Tracks,
    names: Names,
    families: tuple[str, ...] = ("gpu", "host", "state", "untraced"),
) -> Iterator[SliceTable]:
    """Each family's slices, window by window (one window in memory at a time)."""
    for family in families:
        streams, reader = FAMILIES[family]
        present = [s for s in streams if s in rec.streams]
        open_ends: dict[int, list[int]] = {}
        for t0, t1 in windows(rec, present):
            parts = reader({s: rec.read(s, t0, t1) for s in present}, tracks, names)
            if parts:
                table = _table(parts, open_ends)
                if len(table):
                    yield table


def linked_flows(rec: Recording) -> np.ndarray:
    """Sorted flow keys that have both ends: a CUDA API call and the GPU work it launched."""
    gpu = [
        _flow_key(rows["pid"], rows["correlation"])
        for stream in ("kernel", "memcpy", "memset")
        if stream in rec.streams
        for rows in rec.iter_chunks(stream, reuse=True)
    ]
    if "api" not in rec.streams or not gpu:
        return np.empty(0, np.uint64)
    launched = distinct(np.concatenate(gpu))
    api = [_flow_key(r["pid"], r["correlation"]) for r in rec.iter_chunks("api", reuse=True)]
    calls = np.concatenate(api) if api else np.empty(0, np.uint64)
    both = distinct(calls[np.isin(calls, launched, kind="sort")])
    return both[both > 0]


@dataclass
class Counters:
    track: Track
    times: np.ndarray
    values: np.ndarray


COUNTERS = {
    "gpu": (
        "gpu",
        [
            ("util_gpu", "GPU utilization", "%"),
            ("sm_active", "SM active", "%"),
            ("mem_used", "memory used", "B"),
            ("power_w", "power", "W"),
            ("clock_sm_mhz", "SM clock", "MHz"),
            ("temp_c", "temperature", "°C"),
        ],
    ),
    "proc_gpu": ("pid", [("gpu_mem", "GPU memory", "B"), ("sm_util", "GPU SM utilization", "%")]),
    "proc_host": ("pid", [("cpu_pct", "CPU", "%"), ("rss", "RSS", "B")]),
}
"""Stream → (owner column, [(field, counter name, unit)])."""


def counters(rec: Recording, tracks: Tracks) -> Iterator[Counters]:
    """Sampled values (NVML, host) as counter tracks; missing values are left out."""
    for stream, (key, fields) in COUNTERS.items():
        rows = rec.read(stream) if stream in rec.streams else None
        if rows is None or not len(rows):
            continue
        for owner in distinct(rows[key]).tolist():
            part = rows[rows[key] == owner]
            for column, label, unit in fields:
                values = part[column].astype(np.float64)
                valid = np.isfinite(values) & (values >= 0)
                if not valid.any():
                    continue
                pid = GPU_PID + owner if stream == "gpu" else owner
                name = f"{label} {unit}" if unit != "B" else f"{label} (bytes)"
                track = tracks.get("counter", pid, 0, name, unit)
                yield Counters(track, part["t_ns"][valid], values[valid])
