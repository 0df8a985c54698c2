"""Brendan Gregg's folded stacks (flamegraph.pl, inferno, speedscope): one file, every view.

``-o x.folded`` writes ``x.folded`` (``-o -``: stdout), one line per stack,
``view;owner;frame;…;leaf WEIGHT`` with the weight in microseconds: the view (``on-cpu``,
``off-cpu``, ``gpu``: :mod:`gtop.recordings.exporters.profiles`) is the root frame, so
``flamegraph.pl x.folded`` draws the views side by side and ``grep '^gpu;' x.folded``
keeps one. Every view covers the report's window
(:func:`gtop.recordings.exporters.window.report_window`); the format has no place for it,
so the summary line names it.
"""

from __future__ import annotations

from gtop.analysis.host.thread_time import Folded, folded_text
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.profiles import STREAMS, profiles
from gtop.recordings.exporters.window import report_window
from gtop.recordings.reader import Recording


def export(rec: Recording, out: Output) -> str:
    clipped, covered = report_window(rec)
    folded: Folded = {}
    for profile in profiles(clipped):
        for frames, ns in profile.stacks.items():
            folded[(profile.view, profile.owner, *frames)] = ns / 1e9
    text = folded_text(folded)
    out.stream(binary=False).write(text)
    out.advance(sum(info.n for s in STREAMS for info in rec.chunks(s)))
    where = "stdout" if out.is_stdout else str(out.path)
    return f"wrote {text.count(chr(10))} stacks to {where} over {covered.label()}"
