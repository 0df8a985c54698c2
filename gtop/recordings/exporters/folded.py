"""Brendan Gregg's folded stacks (flamegraph.pl, inferno, speedscope), one file per view.

``-o x.folded`` writes ``x.on-cpu.folded``, ``x.off-cpu.folded`` and ``x.gpu.folded``
(the views of :mod:`gtop.recordings.exporters.profiles`); each line is
``owner;frame;…;leaf WEIGHT`` with the weight in microseconds. To stdout (``-o -``) the
views go into one stream, each line rooted at its view's name.
"""

from __future__ import annotations

from collections import defaultdict

from gtop.analysis.thread_time import Folded, folded_text
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.profiles import STREAMS, VIEWS, profiles
from gtop.recordings.reader import Recording


def export(rec: Recording, out: Output) -> str:
    views: dict[str, Folded] = defaultdict(dict)
    for profile in profiles(rec):
        root = (profile.view,) if out.is_stdout else ()
        folded = views[profile.view]
        for frames, ns in profile.stacks.items():
            folded[(*root, profile.owner, *frames)] = ns / 1e9
    lines = 0
    if out.is_stdout:
        merged = {k: v for view in VIEWS for k, v in views[view].items()}
        text = folded_text(merged)
        out.stream(binary=False).write(text)
        lines = text.count("\n")
    else:
        for view in VIEWS:
            text = folded_text(views[view])
            out.stream(binary=False, tag=view).write(text)
            lines += text.count("\n")
    out.advance(sum(info.n for s in STREAMS for info in rec.chunks(s)))
    files = "stdout" if out.is_stdout else ", ".join(str(p) for p in out.made)
    return f"wrote {lines} stacks to {files}"
