"""Exporters: a recording → another tool's format. One module per format.

Each module defines ``FORMAT`` (the ``--format`` name), ``DESCRIPTION`` and
``export(recording, out) -> str`` (writes ``out``, returns a one-line summary).
"""

from __future__ import annotations

from types import ModuleType

from gtop.recordings.exporters import chrome, csv_tables, perfetto

EXPORTERS: dict[str, ModuleType] = {m.FORMAT: m for m in (perfetto, chrome, csv_tables)}
