"""A window of a recording copied into a new one (``tools/excerpt_recording.py``).

Every row that lies in the window (starts in it and, for an interval, ends in it: what
a recorder stopped at the window's end had written of it) is copied whole and unchanged,
chunk by chunk in the recorded order; every entity valid from before the window's end
is kept (a process named earlier still describes rows in the window), but of the
stacks only those the copied rows name; the metadata is the source's, its time range
and row counts those of the copy, plus
``excerpt`` (the window and the source's span, in seconds from the source's first
record). Nothing is made up: each row of the copy is a row of the source, bit for bit.
"""

from __future__ import annotations

import os

import numpy as np

from gtop.recordings.convert import PAGE_SIZE, copy_into, vacuum
from gtop.recordings.reader import Recording

RECOMPUTED = ("t_start_ns", "t_end_ns", "rows")
"""Metadata the writer works out from the rows it holds."""


def inside(rows: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """The rows that lie in ``[t0, t1)``: start at or after ``t0`` and end (or, without
    an end, start) before ``t1``."""
    names = rows.dtype.names or ()
    last = rows["end_ns"] if "end_ns" in names else rows["t_ns"]
    return rows[(rows["t_ns"] >= t0) & (np.maximum(rows["t_ns"], last) < t1)]


def excerpt(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], from_s: float, to_s: float
) -> dict[str, int]:
    """Write the seconds ``[from_s, to_s)`` of ``src`` (from its first record) to the new
    file ``dst``, compressed for keeping.

    Returns:
        Rows copied per stream.

    Raises:
        RecordingError: ``src`` is not a readable recording.
        FileExistsError: ``dst`` exists.
        ValueError: the window is empty or ``src`` is damaged (an excerpt of a damaged
            file would hide what it lost).
    """
    with Recording(src) as rec:
        if rec.problems:
            raise ValueError(f"{src} is damaged: {rec.damage()}")
        first, last = rec.time_range()
        t0, t1 = first + round(from_s * 1e9), first + round(to_s * 1e9)
        if not t0 < t1 or t1 <= first or t0 > last:
            raise ValueError(f"no data in {from_s}-{to_s} s of {src}")
        window = {"from_s": from_s, "to_s": to_s, "source_s": (last - first) / 1e9}
        meta = {k: v for k, v in rec.meta.items() if k not in RECOMPUTED}
        meta["excerpt"] = window
        copied = copy_into(rec, dst, meta, lambda rows: inside(rows, t0, t1), t1)
    vacuum(dst, PAGE_SIZE)
    return copied
