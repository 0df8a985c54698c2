"""A clipped recording's ``untraced`` rows when an off phase's open row and its closed
row were written in different chunks (the recorder flushes by time, so they often are):
a phase that ended before the window must not come back as one still open, which would
make the whole window NOT_TRACED."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gtop.analysis.attribution import untraced
from gtop.analysis.window.active_window import Window
from gtop.core.layouts import UNTRACED
from gtop.recordings.clipped import ClippedRecording
from gtop.recordings.reader import Recording
from gtop.recordings.writer import RecordingWriter
from tests.analysis.recordings import RECORDINGS
from tests.analysis.sampled import DutyCycle, sample


def write_row_by_row(src: Path, out: Path) -> DutyCycle:
    """``src`` sampled, with each ``untraced`` row in a chunk of its own."""
    with Recording(src) as rec:
        r0, r1 = rec.time_range()
        cycle = DutyCycle(r0, r1 + 1)
        data = sample({name: rec.read(name) for name in rec.streams}, cycle)
        writer = RecordingWriter(out, dict(rec.meta))
    for name, rows in data.items():
        if name != UNTRACED.name and len(rows):
            writer.append(name, rows)
    for i in range(len(data[UNTRACED.name])):
        writer.append(UNTRACED.name, data[UNTRACED.name][i : i + 1])
        writer.flush([UNTRACED.name])
    writer.close({"closed": True})
    return cycle


def test_a_phase_closed_before_the_window_stays_closed(tmp_path: Path) -> None:
    path = tmp_path / "split.gtop"
    cycle = write_row_by_row(RECORDINGS / "fixes" / "decode-eager.gtop", path)
    starts, ends = cycle.off_spans()
    with Recording(path) as rec:
        assert len(rec.chunks(UNTRACED.name)) == len(rec.read(UNTRACED.name))  # one each
        window = Window(int(ends[2]) + 1, int(starts[5]) + 1, "user")
        clipped = ClippedRecording(rec, window)
        for rows in (
            clipped.read(UNTRACED.name),
            np.concatenate(list(clipped.iter_chunks(UNTRACED.name))),
        ):
            (spans,) = untraced.spans_by_pid(untraced.from_stream(rows), window.t1).values()
            got = list(zip(spans.starts.tolist(), spans.ends.tolist(), strict=True))
            assert got == [(int(starts[k]), int(ends[k])) for k in (3, 4, 5)]
