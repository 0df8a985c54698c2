"""A recording's window as the what-if engine's timeline (:mod:`gtop.analysis.what_if`)."""

from __future__ import annotations

from gtop.analysis.cuda_activity import names_from_entities
from gtop.analysis.records import Records, mark_comm
from gtop.analysis.report import stack_frames
from gtop.analysis.what_if import Timeline, build_timeline
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
    from gtop.analysis.ranks import comm_labels

    window = choose(rec, start, end)
    data, kernels = read_report_data(ClippedRecording(rec, window))
    records = Records.from_streams(
        {k: v for k, v in data.items() if len(v)}, kernels.ops if kernels else None
    )
    entities = rec.entities()
    names = names_from_entities(entities)
    mark_comm(records.ops, comm_labels(names))
    return build_timeline(records, window.t0, window.t1, names, stack_frames(entities))
