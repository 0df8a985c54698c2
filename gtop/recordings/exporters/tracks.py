"""A recording as timeline tracks: slices (intervals) and counters, read chunk by chunk.

The trace exporters (Perfetto, Chrome) serialise these; neither reads streams itself, so
both show the same tracks with the same names.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from gtop.core.layouts import ApiClass, BlockReason, CopyKind, ThreadState
from gtop.recordings.reader import Recording


@dataclass(frozen=True)
class Track:
    """Where events go: ``group`` is a process-like lane (a GPU, a pid), ``name`` a row."""

    group: str
    name: str
    pid: int
    tid: int
    counter: bool = False


@dataclass
class Slices:
    track: Track
    starts: np.ndarray
    ends: np.ndarray
    labels: list[str]


@dataclass
class Counters:
    track: Track
    times: np.ndarray
    values: np.ndarray


GPU_GROUP_PID = 1_000_000_000
"""Synthetic pid for GPU lanes, above any real pid."""


def _names(rec: Recording, kind: str) -> dict[int, str]:
    out = {}
    for entity in rec.entities(kind):
        out[int(entity.key)] = str(entity.value.get("demangled") or entity.value.get("name"))
    return out


STATE_TID_OFFSET = 1 << 22
"""Thread-state rows get their own synthetic tid (tid + this, above any real tid)."""


def _gpu_track(device: int, stream: int) -> Track:
    return Track(f"GPU {device}", f"stream {stream}", GPU_GROUP_PID + device, 1 + stream)


def _by(rows: np.ndarray, *keys: str) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    combos = np.unique(np.stack([rows[k].astype(np.int64) for k in keys], axis=1), axis=0)
    for combo in combos:
        mask = np.ones(len(rows), dtype=bool)
        for key, value in zip(keys, combo):
            mask &= rows[key] == value
        yield tuple(int(v) for v in combo), rows[mask]


def slices(rec: Recording) -> Iterator[Slices]:
    """Every interval record as a slice on its track."""
    kernel_names = _names(rec, "kernel_name")
    marker_names = _names(rec, "marker_name")
    for rows in rec.iter_chunks("kernel"):
        for (device, stream), part in _by(rows, "device", "stream"):
            labels = [kernel_names.get(int(i), f"kernel {int(i)}") for i in part["name_id"]]
            yield Slices(_gpu_track(device, stream), part["t_ns"], part["end_ns"], labels)
    for stream_name in ("memcpy", "memset"):
        for rows in rec.iter_chunks(stream_name):
            for (device, stream), part in _by(rows, "device", "stream"):
                if stream_name == "memcpy":
                    labels = [
                        f"memcpy {CopyKind(int(k)).name} {int(b)} B"
                        if int(k) in CopyKind._value2member_map_
                        else f"memcpy {int(b)} B"
                        for k, b in zip(part["copy_kind"], part["bytes"])
                    ]
                else:
                    labels = [f"memset {int(b)} B" for b in part["bytes"]]
                yield Slices(_gpu_track(device, stream), part["t_ns"], part["end_ns"], labels)
    for rows in rec.iter_chunks("api"):
        for (pid, tid), part in _by(rows, "pid", "tid"):
            labels = [
                f"CUDA {ApiClass(int(c)).name.lower()} (cbid {int(b)})"
                for c, b in zip(part["api_class"], part["cbid"])
            ]
            yield Slices(
                Track(f"pid {pid}", f"thread {tid}", pid, tid), part["t_ns"], part["end_ns"], labels
            )
    for rows in rec.iter_chunks("marker"):
        for (pid, tid), part in _by(rows, "pid", "tid"):
            labels = [marker_names.get(int(i), f"marker {int(i)}") for i in part["name_id"]]
            yield Slices(
                Track(f"pid {pid}", f"thread {tid}", pid, tid), part["t_ns"], part["end_ns"], labels
            )
    for rows in rec.iter_chunks("thread_state"):
        for (pid, tid), part in _by(rows, "pid", "tid"):
            labels = [_state_label(int(s), int(r)) for s, r in zip(part["state"], part["reason"])]
            yield Slices(
                Track(f"pid {pid}", f"thread {tid} state", pid, tid + STATE_TID_OFFSET),
                part["t_ns"],
                part["end_ns"],
                labels,
            )


def _state_label(state: int, reason: int) -> str:
    if state == ThreadState.BLOCKED:
        name = BlockReason(reason).name if reason in BlockReason._value2member_map_ else "?"
        return f"blocked: {name.lower()}"
    return "on-CPU" if state == ThreadState.ON_CPU else "runnable"


COUNTERS = {
    "gpu": (
        "gpu",
        [
            ("util_gpu", "utilization %"),
            ("sm_active", "SM active %"),
            ("mem_used", "memory used B"),
            ("power_w", "power W"),
        ],
    ),
    "proc_gpu": ("pid", [("gpu_mem", "GPU memory B"), ("sm_util", "SM util %")]),
    "proc_host": ("pid", [("cpu_pct", "CPU %"), ("rss", "RSS B")]),
}


def counters(rec: Recording) -> Iterator[Counters]:
    """Sampled values (NVML, host) as counter tracks; missing values are left out."""
    for stream, (key, fields) in COUNTERS.items():
        rows = rec.read(stream) if stream in rec.streams else None
        if rows is None or not len(rows):
            continue
        for (owner,), part in _by(rows, key):
            for field, label in fields:
                values = part[field].astype(np.float64)
                valid = np.isfinite(values) & (values >= 0)
                if not valid.any():
                    continue
                if stream == "gpu":
                    track = Track(f"GPU {owner}", label, GPU_GROUP_PID + owner, 0, counter=True)
                else:
                    track = Track(f"pid {owner}", label, owner, 0, counter=True)
                yield Counters(track, part["t_ns"][valid], values[valid])
