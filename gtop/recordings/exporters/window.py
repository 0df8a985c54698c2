"""The window an export covers, and its name in the export.

Flamegraph and profile formats (folded, pprof, speedscope, kineto) cover the window
``gtop report`` diagnoses (:func:`gtop.recordings.clipped.choose`: the steady state of
the target's GPU work), so their numbers are the report's; timeline formats (perfetto,
chrome, csv) cover the whole recording. ``--from``/``--to`` choose another window for
every format (the recording then arrives as a
:class:`~gtop.recordings.clipped.ClippedRecording`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gtop.analysis.report.document import window_section
from gtop.analysis.window.active_window import Window
from gtop.recordings.clipped import ClippedRecording, choose
from gtop.recordings.reader import Recording


@dataclass(frozen=True)
class Covered:
    """A window and the recording's whole range (first and last timestamp)."""

    window: Window
    recorded: tuple[int, int]

    def section(self) -> dict[str, Any]:
        """The report's ``window`` key (kind, from_s, to_s, duration_s) with its label."""
        return {**window_section(self.recorded, self.window), "label": self.label()}

    def label(self) -> str:
        """E.g. ``steady 3.96–8.84 s of 12.80 s``, seconds from the recording's start
        (kinds: :data:`gtop.analysis.report.report_text.WINDOW_WORDS`)."""
        w = window_section(self.recorded, self.window)
        whole = (self.recorded[1] + 1 - self.recorded[0]) / 1e9
        kind = "whole recording" if w["kind"] == "recording" else w["kind"]
        return f"{kind} {w['from_s']:.2f}–{w['to_s']:.2f} s of {whole:.2f} s"


def _recorded(rec: Recording | ClippedRecording) -> tuple[int, int]:
    return rec.rec.time_range() if isinstance(rec, ClippedRecording) else rec.time_range()


def report_window(rec: Recording | ClippedRecording) -> tuple[ClippedRecording, Covered]:
    """``rec`` seen through the report's window, or through the one ``--from``/``--to``
    chose (``rec`` already clipped)."""
    if isinstance(rec, ClippedRecording):
        return rec, Covered(rec.window, _recorded(rec))
    window = choose(rec)
    return ClippedRecording(rec, window), Covered(window, rec.time_range())


def covered(rec: Recording | ClippedRecording) -> Covered:
    """What a timeline export of ``rec`` covers: the window ``--from``/``--to`` chose, or
    the whole recording."""
    if isinstance(rec, ClippedRecording):
        return Covered(rec.window, _recorded(rec))
    r0, r1 = rec.time_range()
    return Covered(Window(r0, r1 + 1, "recording"), (r0, r1))
