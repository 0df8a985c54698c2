"""gtop's Python API: a recording's streams, entities, window, attribution, verdict and
report, without the command line (``docs/api.md``).

>>> import gtop
>>> with gtop.open("recordings/train_loop_cupti.gtop") as rec:
...     report = rec.report()

Stable: what ``__all__`` names here. A recording's streams are numpy structured arrays
of the layouts the file declares (:data:`FORMAT_VERSION`); the report is the document
``gtop report --json`` writes, described by ``docs/report.schema.json`` at
:data:`REPORT_VERSION`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.analysis.report.document import REPORT_VERSION
from gtop.analysis.window.active_window import Window
from gtop.core.hub import Entity
from gtop.recordings import clipped
from gtop.recordings import reader as _reader
from gtop.recordings.reader import RecordingError
from gtop.recordings.report_data import read_inputs, report_of
from gtop.recordings.schema import FORMAT_VERSION

__all__ = [
    "FORMAT_VERSION",
    "REPORT_VERSION",
    "Entity",
    "Recording",
    "RecordingError",
    "Window",
    "open",
]


def open(path: str | os.PathLike[str]) -> Recording:
    """Open a ``.gtop`` recording for reading (close it, or use it in a ``with``).

    Raises:
        RecordingError: the file is missing or not a readable gtop recording.
    """
    return Recording(path)


class Recording:
    """An open recording: what ``gtop replay`` and ``gtop report`` read.

    A damaged file opens with what is intact (:attr:`problems` says what was lost).
    Reports are computed on first use and kept, one per window asked for.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._rec = _reader.Recording(path)
        self._reports: dict[tuple[str | None, str | None], tuple[dict[str, Any], Window]] = {}

    @property
    def path(self) -> Path:
        return self._rec.path

    @property
    def meta(self) -> dict[str, Any]:
        """The recording's metadata: ``host``, ``target``, ``format_version``, ``devices``,
        ``driver_version``, ``clock``, ... (``gtop.recordings.schema``)."""
        return self._rec.meta

    @property
    def problems(self) -> list[str]:
        """What could not be read (empty for an intact file)."""
        return list(self._rec.problems)

    @property
    def streams(self) -> list[str]:
        """The names of the streams recorded (``kernel``, ``memcpy``, ``api``, ``gpu``,
        ``thread_state``, ``cpu_sample``, ...)."""
        return sorted(self._rec.streams)

    def stream(self, name: str, t0: int | None = None, t1: int | None = None) -> np.ndarray:
        """The rows of stream ``name`` with ``t0 <= t_ns < t1`` (ns, the recording's clock;
        all by default), by time, as a numpy structured array (field names and units as
        :attr:`dtype` gives them: ``t_ns``, ``end_ns``, ``pid``, ...).

        Raises:
            KeyError: the recording has no such stream.
        """
        if name not in self._rec.streams:
            raise KeyError(f"no stream {name!r} in {self._rec.path.name}: {self.streams}")
        return self._rec.read(name, t0, t1)

    def dtype(self, name: str) -> np.dtype:
        """The layout of stream ``name`` (raises KeyError when it is not recorded)."""
        return self._rec.streams[name]

    def entities(self, kind: str | None = None) -> list[Entity]:
        """Descriptive facts (``process``, ``device``, ``kernel_name``, ``stack``, ...) in
        recorded order; ``kind``: only those."""
        return self._rec.entities(kind)

    def kernel_names(self) -> dict[int, str]:
        """Kernel names by the ``name_id`` of the ``kernel`` stream's rows."""
        return names_from_entities(self._rec.entities("kernel_name"))

    def time_range(self) -> tuple[int, int]:
        """First and last timestamp recorded (ns)."""
        return self._rec.time_range()

    def window(self, start: str | None = None, end: str | None = None) -> Window:
        """The window a report covers: by default the steady state of the target's GPU
        work; ``start``/``end`` as ``gtop report --from/--to`` take them (seconds from
        the start, ``steady`` or ``active``).

        Raises:
            ValueError: ``start``/``end`` are not a window of this recording.
        """
        if (start, end) in self._reports:
            return self._reports[start, end][1]
        return clipped.choose(self._rec, start, end)

    def active_window(self) -> Window:
        """First to last GPU work of the target (:mod:`gtop.analysis.window.active_window`)."""
        return clipped.active(self._rec)

    def report(self, start: str | None = None, end: str | None = None) -> dict[str, Any]:
        """The document ``gtop report --json`` writes (``docs/report.schema.json``), over
        :meth:`window`'s window. Computed once per window; do not modify it.

        Raises:
            ValueError: ``start``/``end`` are not a window of this recording.
        """
        if (start, end) not in self._reports:
            inputs = read_inputs(self._rec, start, end)
            self._reports[start, end] = (report_of(self._rec, inputs), inputs.window)
        return self._reports[start, end][0]

    def attribution(self, start: str | None = None, end: str | None = None) -> dict[str, Any]:
        """The on-/off-GPU breakdown per GPU (the report's ``gpu`` key): ``gar``,
        ``on_s``/``off_s`` and each cause's seconds and share of the window."""
        return self.report(start, end)["gpu"]

    def verdict(self, start: str | None = None, end: str | None = None) -> dict[str, Any] | None:
        """Why the GPU is idle (the report's ``verdict``: ``kind``, ``headline``,
        ``evidence``, ``fix``); None without GPU work."""
        return self.report(start, end)["verdict"]

    def kernels(self, start: str | None = None, end: str | None = None) -> list[dict[str, Any]]:
        """Per kernel name: count, total, mean, min and max time, geometry (the report's
        ``kernels``), by total time."""
        return self.report(start, end)["kernels"]

    def close(self) -> None:
        self._rec.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<gtop.Recording {self._rec.path.name}: {', '.join(self.streams)}>"
