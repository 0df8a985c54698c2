"""Exporters: a recording → another tool's format. One module per format.

Each module defines ``FORMAT`` (the ``--format`` name), ``DESCRIPTION``, ``SUFFIXES``
(output names that imply the format) and ``export(recording, output) -> str``, which
writes through an :class:`~gtop.recordings.exporters.output.Output` and returns a
one-line summary.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from gtop.recordings.exporters import (
    chrome,
    csv_tables,
    folded,
    kineto,
    perfetto,
    pprof,
    speedscope,
)

EXPORTERS: dict[str, ModuleType] = {
    m.FORMAT: m for m in (perfetto, chrome, kineto, speedscope, folded, pprof, csv_tables)
}


def infer_format(output: Path) -> str | None:
    """The format an output name implies (the longest matching suffix wins, ``.gz``
    aside), or None when it implies none or several."""
    name = output.name.lower()
    best: dict[int, set[str]] = {}
    for fmt, module in EXPORTERS.items():
        for suffix in module.SUFFIXES:
            if name.endswith(suffix) or name.removesuffix(".gz").endswith(suffix):
                best.setdefault(len(suffix), set()).add(fmt)
    if not best:
        return None
    formats = best[max(best)]
    return next(iter(formats)) if len(formats) == 1 else None
