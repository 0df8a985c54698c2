"""A Chrome trace shaped as PyTorch's profiler (Kineto) writes it, for HolisticTraceAnalysis
and TensorBoard's trace viewer.

GPU work is on ``pid`` = device index, ``tid`` = stream, with ``cat`` ``kernel``,
``gpu_memcpy`` or ``gpu_memset`` and Kineto's ``args`` (device, stream, correlation,
grid, block, registers per thread, shared memory, bytes); CUDA calls are ``cuda_runtime``
/ ``cuda_driver`` on their thread with their correlation id; ``ac2g`` flows join the two;
NVTX ranges are ``user_annotation``. The header has ``deviceProperties``,
``baseTimeNanoseconds`` and ``gtopWindow``; timestamps are CLOCK_MONOTONIC microseconds.

The trace covers the report's window (:func:`gtop.recordings.exporters.window.report_window`)
and says so to HolisticTraceAnalysis, whose temporal breakdown takes a rank's GPU time
from its first to its last event on a GPU stream (any event with ``args.stream``) and
counts as busy the union of those events:

* two empty events (``cat`` ``gtop_window``) on lane :data:`WINDOW_STREAM` of the first
  GPU mark the window's start and end, so HTA's span is the report's window;
* kernel sampling's off phases are on a row of each process (``cat`` ``not_traced``, no
  stream: HTA leaves them out). A trace cannot say "not traced", and HTA would count
  their whole length as idle; so each off phase also gets one event on lane
  :data:`ESTIMATE_STREAM` of its GPU (``cat`` ``gtop_estimate``, name "not traced:
  estimated GPU busy"), as long as the GPU time the report estimates for it (the cause
  mix of the traced time before it, :func:`gtop.analysis.attribution.partition.untraced_estimates`),
  starting where the phase starts. It is an estimate, not a kernel: its args say so and
  give the phase's length. With it HTA's idle time is the report's (1 - GAR).

Timestamps keep nanoseconds (3 decimals of µs). HTA rounds such events inward to whole
µs (start up, end down: a 3 µs kernel loses up to 2 µs, a third of a launch-bound
decode's busy time) unless ``HTA_DISABLE_NS_ROUNDING=1``, its own switch: set it. One
trace is one HTA rank; a recording of several GPUs reads there as their union.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np

from gtop.analysis.attribution.causes import ON_CAUSES, Cause
from gtop.analysis.attribution.partition import Partition, UnitResult, untraced_estimates
from gtop.analysis.attribution.range_blocks import blocks
from gtop.core.layouts import UNTRACED
from gtop.recordings.clipped import OP_STREAMS, ClippedRecording
from gtop.recordings.exporters import trace_json
from gtop.recordings.exporters import tracks as tk
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.profiles import gpu_records
from gtop.recordings.exporters.window import Covered, report_window
from gtop.recordings.reader import Recording

STREAMS = ("kernel", "memcpy", "memset", "api", "marker", "untraced")
WINDOW_STREAM = 2**31 - 2
"""The GPU lane of the window's two marks (above any CUDA stream id)."""
ESTIMATE_STREAM = 2**31 - 1
"""The GPU lane of the off phases' estimated busy time."""
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


def _event(name: str, cat: str, device: int, stream: int, t: int, ns: int, **args: Any) -> str:
    us = f"{t // 1000}.{t % 1000:03d}"
    dur = f"{ns // 1000}.{ns % 1000:03d}"
    args = {"device": device, "stream": stream, **args}
    return (
        f'{{"ph":"X","cat":"{cat}","name":{json.dumps(name)},"pid":{device},'
        f'"tid":{stream},"ts":{us},"dur":{dur},"args":{json.dumps(args)}}}'
    )


def _window_marks(rec: ClippedRecording, covered: Covered) -> list[str]:
    """The window's start and end on the first GPU, when it holds GPU work."""
    w = covered.window
    if not any(c.t_last >= w.t0 for s in OP_STREAMS if s in rec.streams for c in rec.chunks(s)):
        return []
    device = min((int(e.key) for e in rec.entities("device")), default=0)
    kind = covered.window.kind
    return [
        _event(f"gtop window {edge} ({kind})", "gtop_window", device, WINDOW_STREAM, t, 0)
        for edge, t in (("start", w.t0), ("end", w.t1))
    ]


def _estimates(rec: ClippedRecording) -> Iterator[str]:
    """Each off phase's estimated GPU busy time, per GPU (see the module docstring)."""
    if UNTRACED.name not in rec.streams:
        return
    records = gpu_records(rec)
    if not len(records.ops):
        return
    by_device: dict[int, list[UnitResult]] = {}
    for result, _ in blocks(records, rec.window.t0, rec.window.t1, "device"):
        for unit, res in result.items():
            by_device.setdefault(unit.device, []).append(res)
    for device, results in sorted(by_device.items()):
        for res, busy in _busy_per_phase(results):
            p = res.partition
            off = p.causes == Cause.NOT_TRACED
            spans = zip(p.starts[off].tolist(), p.ends[off].tolist(), busy.tolist(), strict=True)
            for start, end, ns in spans:
                yield _event(
                    "not traced: estimated GPU busy",
                    "gtop_estimate",
                    device,
                    ESTIMATE_STREAM,
                    start,
                    ns,
                    estimated=True,
                    not_traced_us=(end - start) / 1e3,
                )


def _busy_per_phase(results: list[UnitResult]) -> Iterator[tuple[UnitResult, np.ndarray]]:
    """Each block's off phases' estimated on-GPU ns, as the report sums blocks
    (:meth:`~gtop.analysis.attribution.partition.Summary.plus`): a block that traced nothing takes
    the mix of the blocks before it, or of the next one when none before traced."""
    on = list(ON_CAUSES)
    so_far: np.ndarray | None = None  # the estimate summed over the blocks done
    waiting: list[UnitResult] = []
    for res in results:
        if not res.traced_ns:
            if so_far is None:
                waiting.append(res)
                continue
            share = so_far[on].sum() / so_far.sum()
            so_far = so_far * (1 + res.duration_ns / so_far.sum())
            yield res, _spread(res.partition, share)
            continue
        est = res.estimated
        for early in waiting:
            yield early, _spread(early.partition, est[on].sum() / est.sum())
        waiting = []
        yield res, np.rint(untraced_estimates(res.partition)[:, on].sum(axis=1)).astype(np.int64)
        so_far = est if so_far is None else so_far + est


def _spread(p: Partition, share: float) -> np.ndarray:
    """``share`` of each off phase of ``p``, in whole ns."""
    off = p.causes == Cause.NOT_TRACED
    return np.rint((p.ends - p.starts)[off] * share).astype(np.int64)


FLAVOUR = trace_json.Flavour(
    lane=_lane,
    families=("gpu", "host", "untraced"),
    counters=False,
    relative=False,
    api_cbid=True,
    header=_header,
    process_label=_process_label,
)


def export(rec: Recording, out: Output) -> str:
    clipped, covered = report_window(rec)
    extra = [*_window_marks(clipped, covered), *_estimates(clipped)]
    return trace_json.write(clipped, out, FLAVOUR, covered, extra)
