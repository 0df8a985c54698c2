"""Read what the report needs from a recording, the kernel table digested chunk by chunk."""

from __future__ import annotations

from typing import Any

import numpy as np

from gtop.analysis.cuda_activity import KernelStats
from gtop.analysis.records import OpsBuilder
from gtop.analysis.report import (
    REPORT_STREAMS,
    KernelDigest,
    build_report,
    phases_section,
    window_section,
)
from gtop.recordings.clipped import ClippedRecording, active, choose
from gtop.recordings.reader import Recording

WHOLE_RECORDING = ("gpu", "proc_gpu", "proc_host")
"""NVML and process samples: the report's ``devices`` and ``processes`` summarise the
whole recording; the rest covers the window."""


def read_report(rec: Recording, start: str | None = None, end: str | None = None) -> dict[str, Any]:
    """``gtop report``'s document over the steady state of the recording's active
    window, or the window ``start``/``end`` name (:func:`~gtop.recordings.clipped.choose`),
    with the ``window`` it covers and the ``phases`` around it.

    Raises:
        ValueError: ``start``/``end`` are not a window of this recording.
    """
    window = choose(rec, start, end)
    view = ClippedRecording(rec, window)
    recorded = rec.time_range()
    entities = rec.entities()
    data, kernels = read_report_data(view)
    for name in WHOLE_RECORDING:  # what the recording saw of GPUs and processes: all of it
        if name in rec.streams:
            data[name] = rec.read(name)
    report = build_report(
        rec.meta, data, entities, rec.problems, view.time_range(), kernels, recorded
    )
    act = active(rec)
    first = min(act.t0, window.t0)
    startup = {n: rec.read(n, t1=first) for n in ("thread_state", "cpu_sample")}
    startup = {n: rows for n, rows in startup.items() if len(rows)}
    pid = (rec.meta.get("target") or {}).get("pid")
    stacks = {int(e.key): e.value for e in entities if e.kind == "stack"}
    report["window"] = window_section(recorded, window)
    report["phases"] = phases_section(recorded, act, window, startup, stacks, pid)
    return report


def read_report_data(
    rec: Recording | ClippedRecording,
) -> tuple[dict[str, np.ndarray], KernelDigest | None]:
    """The streams :func:`~gtop.analysis.report.build_report` reads; the kernel table as
    a digest when its chunks are in time order (one pass over reused memory), else as
    rows (the reader sorts them)."""
    data = {n: rec.read(n) for n in REPORT_STREAMS if n in rec.streams and n != "kernel"}
    if "kernel" not in rec.streams:
        return data, None
    stats = KernelStats()
    ops = OpsBuilder(sum(info.n for info in rec.chunks("kernel")), data)
    last = None
    for chunk in rec.iter_chunks("kernel", reuse=True):
        t = chunk["t_ns"]
        if (last is not None and t[0] < last) or bool(np.any(t[1:] < t[:-1])):
            data["kernel"] = rec.read("kernel")
            return data, None
        last = t[-1]
        stats.add(chunk)
        ops.add_kernels(chunk)
    return data, KernelDigest(stats, ops.finish())


def read_pair(
    recs: tuple[Recording, Recording], start: str | None = None, end: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two recordings' reports over the same ``start``/``end`` (:func:`read_report`) and
    the same kind of window: by default each one's steady state, or each one's active
    window when one of them is too short to find a steady state in.

    Raises:
        ValueError: ``start``/``end`` are not a window of one of them (named first).
    """

    def both(start: str | None, end: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        reports = []
        for rec in recs:
            try:
                reports.append(read_report(rec, start, end))
            except ValueError as exc:
                raise ValueError(f"{rec.path.name}: {exc}") from None
        return reports[0], reports[1]

    a, b = both(start, end)
    kinds = {a["window"]["kind"], b["window"]["kind"]}
    if start is None and end is None and kinds == {"steady", "active"}:
        a, b = both("active", "active")
    return a, b
