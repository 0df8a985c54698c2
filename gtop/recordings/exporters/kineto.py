"""A Chrome trace shaped as PyTorch's profiler (Kineto) writes it, for HolisticTraceAnalysis
and TensorBoard's trace viewer.

GPU work is on ``pid`` = device index, ``tid`` = stream, with ``cat`` ``kernel``,
``gpu_memcpy`` or ``gpu_memset`` and Kineto's ``args`` (device, stream, correlation,
grid, block, registers per thread, shared memory, bytes); CUDA calls are ``cuda_runtime``
/ ``cuda_driver`` on their thread with their correlation id; ``ac2g`` flows join the two;
NVTX ranges are ``user_annotation``. The header has ``deviceProperties`` and
``baseTimeNanoseconds``; timestamps are CLOCK_MONOTONIC microseconds.
"""

from __future__ import annotations

from typing import Any

from gtop.recordings.exporters import trace_json
from gtop.recordings.exporters import tracks as tk
from gtop.recordings.exporters.output import Output
from gtop.recordings.reader import Recording

STREAMS = ("kernel", "memcpy", "memset", "api", "marker")
BYTES_PER_ROW = 165


def _lane(track: tk.Track) -> tuple[int, int]:
    if track.pid >= tk.GPU_PID:
        return track.pid - tk.GPU_PID, track.tid
    return track.pid, track.tid


def _process_label(pid: int, tracks: tk.Tracks) -> str:
    return f"GPU {pid - tk.GPU_PID}" if pid >= tk.GPU_PID else tracks.process_name(pid)


def _device(index: int, entity: dict[str, Any]) -> dict[str, Any]:
    major, _, minor = str(entity.get("compute_capability") or "0.0").partition(".")
    out = {
        "id": index,
        "name": entity.get("name", ""),
        "totalGlobalMem": entity.get("mem_total") or 0,
        "computeMajor": int(major or 0),
        "computeMinor": int(minor or 0),
    }
    if entity.get("sm_count"):
        out["numSms"] = entity["sm_count"]
    return out


def _header(rec: Recording, tracks: tk.Tracks) -> dict[str, Any]:
    clock = rec.meta.get("clock") or {}
    return {
        "schemaVersion": 1,
        "deviceProperties": [_device(i, d) for i, d in sorted(tracks.devices.items())],
        "baseTimeNanoseconds": int(clock.get("realtime_minus_monotonic_ns") or 0),
        "traceName": str(rec.path.name),
        # one process's trace: rank 0 of 1 (HTA reads the rank from here)
        "distributedInfo": {"rank": 0, "world_size": 1},
    }


FLAVOUR = trace_json.Flavour(
    lane=_lane,
    families=("gpu", "host"),
    counters=False,
    relative=False,
    api_cbid=True,
    header=_header,
    process_label=_process_label,
)


def export(rec: Recording, out: Output) -> str:
    return trace_json.write(rec, out, FLAVOUR)
