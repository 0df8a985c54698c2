"""Read what the report needs from a recording: the window chosen and each stream read
once (the GPU work in one pass, :mod:`gtop.recordings.gpu_pass`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gtop.analysis.diagnosis.what_if import Change
from gtop.analysis.report.document import (
    REPORT_STREAMS,
    KernelDigest,
    build_report,
    phases_section,
    window_section,
)
from gtop.analysis.window.active_window import Window
from gtop.recordings.clipped import (
    OP_STREAMS,
    ClippedRecording,
    active,
    one_time,
    reach,
    resolve,
)
from gtop.recordings.gpu_pass import GpuPass
from gtop.recordings.reader import Recording

WHOLE_RECORDING = ("gpu", "proc_gpu", "proc_host")
"""NVML and process samples: the report's ``devices`` and ``processes`` summarise the
whole recording; the rest covers the window."""
STARTUP_STREAMS = ("thread_state", "cpu_sample")
"""What the ``startup`` phase is described by (read as far as the first GPU work)."""
ONE_TIME_STREAMS = ("cpu_sample",)
"""Read whole by the report: the one-time phases are found in all of it."""


@dataclass
class ReportInputs:
    """Everything a report is made from, each stream read once (:func:`read_inputs`):
    extend a report by reading these, not the recording again."""

    active: Window
    """The target's active window (:func:`~gtop.recordings.clipped.active`)."""
    window: Window
    """The window the report covers (:func:`~gtop.recordings.clipped.resolve`)."""
    data: dict[str, np.ndarray]
    """Every stream :func:`~gtop.analysis.report.document.build_report` reads, over ``window``
    (NVML and process samples: the whole recording); the kernels as ``kernels`` unless
    out of time order."""
    kernels: KernelDigest | None
    startup: dict[str, np.ndarray]
    """Thread states and CPU samples before the first GPU work (the ``startup`` phase)."""


def read_inputs(rec: Recording, start: str | None = None, end: str | None = None) -> ReportInputs:
    """The window chosen once and every stream read once for it (the GPU work in one
    pass, :class:`~gtop.recordings.gpu_pass.GpuPass`).

    Raises:
        ValueError: ``start``/``end`` are not a window of this recording.
    """
    act = active(rec)
    gpu = GpuPass(rec, act, reach(rec, act, start, end))
    # every stack sample once: the one-time phases (which the window's choice needs)
    # are found in all of them, and the window's and the startup's are cut from them
    samples = {s: rec.read(s) for s in ONE_TIME_STREAMS if s in rec.streams}
    one_time(rec, samples.get("cpu_sample"))
    window = resolve(rec, act, gpu.steady(), start, end)
    data, kernels = gpu.report_data(window)
    first = min(act.t0, window.t0)
    startup = _read_streams(rec, window, data, WHOLE_RECORDING, first, samples)
    rec.drop_cache()  # every stream is read: the chunks it kept are copies of `data`'s rows
    return ReportInputs(act, window, data, kernels, startup)


def read_report(
    rec: Recording,
    start: str | None = None,
    end: str | None = None,
    asked: Sequence[Change] = (),
) -> dict[str, Any]:
    """``gtop report``'s document over the steady state of the recording's active
    window, or the window ``start``/``end`` name (:func:`~gtop.recordings.clipped.choose`),
    with the ``window`` it covers and the ``phases`` around it; ``asked``: ``--what-if``
    changes to predict.

    Raises:
        ValueError: ``start``/``end`` are not a window of this recording.
    """
    return report_of(rec, read_inputs(rec, start, end), asked)


def report_of(rec: Recording, inputs: ReportInputs, asked: Sequence[Change] = ()) -> dict[str, Any]:
    """:func:`read_report`'s document from its inputs (``asked``: ``--what-if`` changes)."""
    window, recorded, entities = inputs.window, rec.time_range(), rec.entities()
    report = build_report(
        rec.meta,
        inputs.data,
        entities,
        rec.problems,
        (window.t0, window.t1 - 1),
        inputs.kernels,
        recorded,
        asked,
    )
    pid = (rec.meta.get("target") or {}).get("pid")
    stacks = {int(e.key): e.value for e in entities if e.kind == "stack"}
    report["window"] = window_section(recorded, window)
    report["phases"] = phases_section(
        recorded, inputs.active, window, inputs.startup, stacks, pid, one_time(rec)
    )
    return report


def _read_streams(
    rec: Recording,
    window: Window,
    data: dict[str, np.ndarray],
    whole: tuple[str, ...],
    first: int | None = None,
    read: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Into ``data``: every other stream the report reads, over ``window`` (the whole
    recording for those in ``whole``); returned: the startup rows (before ``first``),
    read while the chunks just read are in the reader's cache. ``read``: streams read
    whole already, cut here rather than read again."""
    view = ClippedRecording(rec, window)
    read = read or {}
    startup = {}
    for name in REPORT_STREAMS:
        if name not in rec.streams or name in OP_STREAMS:
            continue
        if name in read:
            data[name] = read[name] if name in whole else view.keep(read[name], name)
        else:
            data[name] = rec.read(name) if name in whole else view.read(name)
        if name in STARTUP_STREAMS and first is not None:
            rows = (
                read[name][read[name]["t_ns"] < first] if name in read else rec.read(name, t1=first)
            )
            if len(rows):
                startup[name] = rows
    return startup


def read_report_data(
    rec: Recording | ClippedRecording,
) -> tuple[dict[str, np.ndarray], KernelDigest | None]:
    """The streams :func:`~gtop.analysis.report.document.build_report` reads, over the whole
    recording or a clipped one's window; the kernel table as a digest when its chunks
    are in time order (one pass over reused memory), else as rows (the reader sorts
    them)."""
    if isinstance(rec, ClippedRecording):
        rec, window = rec.rec, rec.window
    else:
        r0, r1 = rec.time_range()
        window = Window(r0, r1 + 1, "recording")
    data, kernels = GpuPass(rec, window, window).report_data(window)
    _read_streams(rec, window, data, ())
    return data, kernels


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
