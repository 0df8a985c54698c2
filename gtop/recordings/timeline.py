"""A recording's window as the what-if engine's timeline
(:mod:`gtop.analysis.diagnosis.what_if`)."""

from __future__ import annotations

from gtop.analysis.diagnosis.range_steps import range_names
from gtop.analysis.diagnosis.what_if import Timeline, timeline_from_streams
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.analysis.report.document import stack_frames
from gtop.recordings.clipped import ClippedRecording, choose
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report_data


def read_timeline(
    rec: Recording, start: str | None = None, end: str | None = None
) -> Timeline | None:
    """The timeline of ``gtop report``'s window (or the one ``start``/``end`` name), or
    None without GPU work in it.

    Raises:
        ValueError: ``start``/``end`` are not a window of this recording.
    """
    window = choose(rec, start, end)
    data, kernels = read_report_data(ClippedRecording(rec, window))
    entities = rec.entities()
    return timeline_from_streams(
        data,
        kernels.ops if kernels else None,
        window.t0,
        window.t1,
        names_from_entities(entities),
        stack_frames(entities),
        range_names=range_names(entities),
    )
