"""Exporters: a recording → another tool's format. One module per format.

:data:`FORMATS` lists every format: its ``--format`` name, a description, the output
names that imply it, and the module that writes it. That module is imported only to
export (the command line reads this list alone); it defines
``export(recording, output) -> str``, which writes through an
:class:`~gtop.recordings.exporters.output.Output` and returns a one-line summary, and
may define ``STREAMS`` and ``BYTES_PER_ROW`` (see :mod:`.command`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Format:
    name: str
    """The ``--format`` name."""
    description: str
    suffixes: tuple[str, ...]
    """Output names that imply the format (see :func:`infer_format`)."""
    module: str
    """The module under this package that writes it."""

    def exporter(self) -> ModuleType:
        """The module that writes this format (imported now)."""
        return importlib.import_module(f"{__name__}.{self.module}")


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "perfetto",
            "Perfetto TrackEvent protobuf",
            (".perfetto-trace", ".pftrace"),
            "perfetto",
        ),
        Format("chrome", "Chrome trace-event JSON", (".json",), "chrome"),
        Format(
            "kineto",
            "PyTorch-profiler-shaped Chrome trace (HolisticTraceAnalysis, TensorBoard)",
            (".pt.trace.json",),
            "kineto",
        ),
        Format(
            "speedscope",
            "speedscope JSON: GPU-centric flamegraph, per-thread profiles and timelines",
            (".speedscope.json",),
            "speedscope",
        ),
        Format(
            "folded",
            "folded stacks, one file, each view (on-cpu, off-cpu, gpu) a root frame, µs",
            (".folded",),
            "folded",
        ),
        Format(
            "pprof",
            "gzipped pprof profile.proto, a sample type per view (go tool pprof, Pyroscope)",
            (".pb.gz", ".pprof"),
            "pprof",
        ),
        Format(
            "csv",
            "a directory of CSV files: one per stream, one per entity kind",
            (),
            "csv_tables",
        ),
    )
}


def infer_format(output: Path) -> str | None:
    """The format an output name implies (the longest matching suffix wins, ``.gz``
    aside), or None when it implies none or several."""
    name = output.name.lower()
    best: dict[int, set[str]] = {}
    for fmt in FORMATS.values():
        for suffix in fmt.suffixes:
            if name.endswith(suffix) or name.removesuffix(".gz").endswith(suffix):
                best.setdefault(len(suffix), set()).add(fmt.name)
    if not best:
        return None
    formats = best[max(best)]
    return next(iter(formats)) if len(formats) == 1 else None
