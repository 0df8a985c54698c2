"""The one reader of the ``untraced`` stream: kernel sampling's off phases as spans.

The agent link publishes, per off phase of a process, an *open* row ``(t_ns=t_off,
end_ns=-1, pid)`` when tracing stops and the *closed* row ``(t_off, t_on, pid)`` of the
same span when it starts again (:data:`gtop.core.layouts.UNTRACED`). A reader may hold
both, or only the open one (the phase is still on, or the closed row lies past what was
read). So: per pid, a closed row wins over the open row of the same ``(pid, t_ns)``, and
an open row without its closed twin extends to the end of the analysed window.
"""

from __future__ import annotations

import numpy as np

from gtop.analysis import intervals as iv

SAMPLE_ABOVE = 20_000
"""Kernels/s above which the agent samples, as the cause's explanation and the verdict's
evidence say it: :data:`gtop.agent.sampling.SAMPLE_ABOVE`, which analysis may not import
(sibling layers; a test holds the two equal)."""

ROW = np.dtype([("t", "<i8"), ("end", "<i8"), ("pid", "<i4")])
"""An ``untraced`` row as analysis holds it (:class:`~gtop.analysis.attribution.records.Records`):
``end`` is -1 while the span is open."""


def from_stream(rows: np.ndarray) -> np.ndarray:
    """``untraced`` stream rows (:data:`gtop.core.layouts.UNTRACED`) as :data:`ROW`."""
    out = np.empty(len(rows), ROW)
    out["t"], out["end"], out["pid"] = rows["t_ns"], rows["end_ns"], rows["pid"]
    return out


def superseded(rows: np.ndarray) -> np.ndarray:
    """Which rows (:data:`ROW`) are open rows whose closed twin (same ``pid`` and ``t``)
    is among ``rows`` too."""
    is_open = rows["end"] < 0
    if not is_open.any() or is_open.all():
        return np.zeros(len(rows), bool)
    # few rows (two per off phase, about one phase a second): a set of tuples will do
    pairs = list(zip(rows["pid"].tolist(), rows["t"].tolist(), strict=True))
    opened = is_open.tolist()
    closed = {k for k, o in zip(pairs, opened, strict=True) if not o}
    return np.array([o and k in closed for k, o in zip(pairs, opened, strict=True)], bool)


def spans_by_pid(rows: np.ndarray, window_end: int) -> dict[int, iv.Spans]:
    """Sorted, disjoint untraced spans per pid from rows (:data:`ROW`) read for a window
    ending at ``window_end`` (open rows end there)."""
    if not len(rows):
        return {}
    keep = ~superseded(rows)
    pid = rows["pid"][keep]
    t = rows["t"][keep].astype(np.int64)
    end = rows["end"][keep].astype(np.int64)
    end = np.where(end < 0, np.int64(window_end), end)
    out = {}
    for p in np.unique(pid).tolist():
        spans = iv.union(t[pid == p], end[pid == p])
        if len(spans):
            out[int(p)] = spans
    return out


def union_over(spans: dict[int, iv.Spans], pids: list[int] | np.ndarray) -> iv.Spans:
    """The union of the spans of ``pids`` (a device unit: untraced where any of its
    processes was)."""
    got = [spans[p] for p in np.asarray(pids).tolist() if p in spans]
    if not got:
        return iv.EMPTY
    if len(got) == 1:
        return got[0]
    return iv.union(np.concatenate([s.starts for s in got]), np.concatenate([s.ends for s in got]))
