"""A recording seen through a window (:mod:`gtop.analysis.window.active_window`): what
``gtop report`` and ``gtop export`` read, so both cover the target's active time.

:class:`ClippedRecording` has the reader's interface (``meta``, ``streams``,
``problems``, ``entities``, ``chunks``, ``read``, ``iter_chunks``, ``time_range``);
its rows are those that overlap the window: an interval row (one with ``end_ns``) when
``[t_ns, end_ns)`` meets it, an instant when ``t_ns`` falls in it, and an ``untraced``
span still open (``end_ns`` -1, no closed row of it read) when it starts before the
window's end. Attribution clips
intervals to the window itself.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from gtop.analysis.attribution import untraced
from gtop.analysis.window.active_window import (
    Window,
    active_span,
    busy_ns,
    coverage,
    nvml_span,
    seconds_to_ns,
    steady_edges,
    steady_span,
)
from gtop.analysis.window.one_time import Phase, find_phases, outside
from gtop.core.hub import Entity
from gtop.core.layouts import UNTRACED
from gtop.core.rows import kept_rows, take_rows
from gtop.recordings.reader import ChunkInfo, Recording

OP_STREAMS = ("kernel", "memcpy", "memset")
"""GPU work: what makes the target active."""
MAX_SECONDS = 1e9
"""``--from``/``--to`` beyond this many seconds (31 years) mean the recording's end."""


class ClippedRecording:
    """``rec`` limited to ``window`` (the reader's interface, read-only)."""

    def __init__(self, rec: Recording, window: Window) -> None:
        self.rec, self.window = rec, window
        self.path = rec.path
        self.meta: dict[str, Any] = rec.meta
        self.streams = rec.streams
        self.problems = rec.problems

    def entities(self, kind: str | None = None) -> list[Entity]:
        return self.rec.entities(kind)

    def damage(self) -> str | None:
        return self.rec.damage()

    def time_range(self) -> tuple[int, int]:
        """The window as the reader gives a range: first and last timestamp."""
        return self.window.t0, self.window.t1 - 1

    def chunks(self, stream: str) -> list[ChunkInfo]:
        """The chunks that may hold rows in the window (an interval row starts at or
        before its chunk's ``t_last``, so only chunks starting after the window go)."""
        return [c for c in self.rec.chunks(stream) if c.t_first < self.window.t1]

    @functools.cached_property
    def _closed_untraced(self) -> frozenset[tuple[int, int]]:
        """``(pid, t_ns)`` of every closed ``untraced`` row in the recording (a few a
        second): an open row and its closed twin may lie in different chunks, and a twin
        that ended before the window is not among the rows kept."""
        if UNTRACED.name not in self.streams:
            return frozenset()
        rows = self.rec.read(UNTRACED.name)
        closed = rows[rows["end_ns"] >= 0]
        return frozenset(zip(closed["pid"].tolist(), closed["t_ns"].tolist(), strict=True))

    def keep(self, rows: np.ndarray, stream: str) -> np.ndarray:
        """Those of ``stream``'s ``rows`` (read from the whole recording) in the window."""
        return take_rows(rows, self._in_window(rows, stream))

    def _in_window(self, rows: np.ndarray, stream: str) -> np.ndarray:
        """Which of ``stream``'s ``rows`` :meth:`keep` keeps."""
        t0, t1 = self.window.t0, self.window.t1
        if "end_ns" in (rows.dtype.names or ()):
            reaches = rows["end_ns"] > t0
            if stream == UNTRACED.name:  # an open span, unless it was closed
                keys = zip(rows["pid"].tolist(), rows["t_ns"].tolist(), strict=True)
                closed = np.fromiter((k in self._closed_untraced for k in keys), bool, len(rows))
                reaches |= (rows["end_ns"] < 0) & ~closed
            return (rows["t_ns"] < t1) & reaches
        return (rows["t_ns"] >= t0) & (rows["t_ns"] < t1)

    def iter_chunks(self, stream: str, reuse: bool = False) -> Iterator[np.ndarray]:
        for rows in self.rec.iter_chunks(stream, reuse):
            if rows["t_ns"][0] >= self.window.t1 and bool(np.all(rows["t_ns"] >= self.window.t1)):
                continue
            kept = self.keep(rows, stream)
            if len(kept):
                yield kept

    def read(self, stream: str, t0: int | None = None, t1: int | None = None) -> np.ndarray:
        # only rows starting before the window's end can be in it: read no further (and,
        # given t0, from there: an exporter reads a long stream window by window)
        end = self.window.t1 if t1 is None else min(t1, self.window.t1)
        rows = self.rec.read(stream, t0, end)  # a fresh array: kept whole, or a view of it
        return kept_rows(rows, self._in_window(rows, stream))


def _last_rows(rec: Recording, stream: str) -> np.ndarray:
    """The rows that start within a second of the stream's last start (where its last
    end is)."""
    last = max(i.t_last for i in rec.chunks(stream))
    return rec.read(stream, t0=last - 1_000_000_000)


OFF_AFTER_NS = 1_000_000
"""A kernel sampling off phase that starts within this of the last traced GPU work ends
the active window (the work ran on into it, or stopped somewhere inside it: unknown)."""


def active(rec: Recording) -> Window:
    """The target's active window: first to last GPU work in CUPTI records (all of them
    come from the target and the children the agent followed), up to the end of an off
    phase the work ran into (:data:`OFF_AFTER_NS`), else NVML's busy samples (the
    target's, when it has a pid), else the whole recording."""
    r0, r1 = rec.time_range()
    firsts, lasts = [], []
    for stream in OP_STREAMS:
        infos = rec.chunks(stream)
        if infos:
            firsts.append(min(i.t_first for i in infos))
            last = _last_rows(rec, stream)
            span = active_span(last["t_ns"], last["end_ns"])
            if span:
                lasts.append(span[1])
    if firsts and lasts:
        return Window(min(firsts), _through_off_phase(rec, max(lasts), r1 + 1), "active")
    span = _nvml_active(rec)
    if span is not None:
        return Window(max(span[0], r0), min(span[1], r1) + 1, "active")
    return Window(r0, r1 + 1, "recording")


def _through_off_phase(rec: Recording, last: int, end: int) -> int:
    """``last`` (the last traced GPU work's end), or the end of the off phase that
    started within :data:`OFF_AFTER_NS` of it (an open one ends at ``end``)."""
    if UNTRACED.name not in rec.streams:
        return last
    spans = untraced.spans_by_pid(untraced.from_stream(rec.read(UNTRACED.name)), end)
    off = untraced.union_over(spans, list(spans))
    after = (off.starts <= last + OFF_AFTER_NS) & (off.ends > last)
    return int(max(last, off.ends[after].max(initial=last)))


def _nvml_active(rec: Recording) -> tuple[int, int] | None:
    period = round(float(rec.meta.get("interval_s") or 0.5) * 1e9)
    target = (rec.meta.get("target") or {}).get("pid")
    if target is not None and "proc_gpu" in rec.streams:
        rows = rec.read("proc_gpu")
        rows = rows[rows["pid"] == int(target)]
        span = nvml_span(rows["t_ns"], rows["sm_util"], period)
        if span is not None:
            return span
    if "gpu" in rec.streams:
        rows = rec.read("gpu")
        return nvml_span(rows["t_ns"], rows["util_gpu"], period)
    return None


def steady(rec: Recording, within: Window) -> Window:
    """The steady state inside ``within`` (:func:`~gtop.analysis.window.active_window.steady_span`),
    from one pass over the GPU work; ``within`` itself when too short to split or when
    the work has no steady state."""
    edges = steady_edges(within.t0, within.t1)
    if edges is None:
        return within
    busy = np.zeros(len(edges) - 1, np.int64)
    clipped = ClippedRecording(rec, within)
    seen = False
    for stream in OP_STREAMS:
        for rows in clipped.iter_chunks(stream, reuse=True):
            busy += busy_ns(rows["t_ns"], rows["end_ns"], edges)
            seen = True
    return steady_from(rec, within, edges, busy if seen else None)


def steady_from(
    rec: Recording, within: Window, edges: np.ndarray, busy: np.ndarray | None
) -> Window:
    """:func:`steady` from the GPU-busy ns per bin between ``edges`` (None: no CUPTI
    records, so the NVML span is all there is), for a reader that summed them itself."""
    if busy is None:
        return within
    span = steady_span(edges, busy, _traced_ns(ClippedRecording(rec, within), edges))
    return within if span is None else Window(*span, "steady")


def _traced_ns(clipped: ClippedRecording, edges: np.ndarray) -> np.ndarray | None:
    """ns per bin between ``edges`` that kernel sampling traced, where any process was
    untraced counting as untraced (None: the recording has no ``untraced`` stream)."""
    if UNTRACED.name not in clipped.streams:
        return None
    rows = untraced.from_stream(clipped.read(UNTRACED.name))
    spans = untraced.spans_by_pid(rows, clipped.window.t1)
    off = untraced.union_over(spans, list(spans))
    return np.diff(edges) - np.diff(coverage(off, edges))


def one_time(rec: Recording, samples: np.ndarray | None = None) -> list[Phase]:
    """The recording's one-time phases (compilation, autotuning, checkpoints,
    evaluation: :mod:`gtop.analysis.window.one_time`), from every thread's stack samples (its
    whole ``cpu_sample`` stream: ``samples`` when the caller read it already); found
    once per open recording (the window's choice and the report both ask)."""
    if rec not in _ONE_TIME:
        _ONE_TIME[rec] = _find_one_time(rec, samples)
    return _ONE_TIME[rec]


_ONE_TIME: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _find_one_time(rec: Recording, samples: np.ndarray | None) -> list[Phase]:
    if "cpu_sample" not in rec.streams:
        return []
    if samples is None:
        samples = rec.read("cpu_sample")
    if not len(samples):
        return []
    stacks = {
        int(e.key): list(e.value.get("frames", ())) for e in rec.entities() if e.kind == "stack"
    }
    return find_phases(
        samples["t_ns"], samples["pid"], samples["stack_id"].astype(np.int64), stacks
    )


def after_one_time(rec: Recording, within: Window) -> Window:
    """``within`` less its one-time phases: of the pieces of it outside them, the one
    with the most GPU-busy time, the steady state (a job's follows its compile; the longest
    piece may be the setup before it, with no GPU work at all: on the H200,
    ``compile_mlp.py`` spent 7 s there and 1 s in its 300 steady steps)."""
    pieces = outside(within.t0, within.t1, one_time(rec))
    if pieces == [(within.t0, within.t1)]:
        return within
    t0, t1 = max(pieces, key=lambda p: (_busy_ns(rec, Window(*p, within.kind)), p[1] - p[0]))
    return Window(t0, t1, "steady")


def _busy_ns(rec: Recording, window: Window) -> int:
    """GPU-busy ns of the CUPTI records in ``window`` (overlaps counted once per stream)."""
    edges = np.array([window.t0, window.t1], np.int64)
    clipped = ClippedRecording(rec, window)
    return sum(
        int(busy_ns(rows["t_ns"], rows["end_ns"], edges)[0])
        for stream in OP_STREAMS
        for rows in clipped.iter_chunks(stream)
    )


def choose(rec: Recording, start: str | None = None, end: str | None = None) -> Window:
    """The window to diagnose: by default the steady state of the active window outside
    its one-time phases (:func:`steady`, :func:`after_one_time`); ``start``/``end``
    give a bound as seconds from the recording's start, ``steady`` or ``active`` (that
    window's bound).

    The one place that chooses it (issue 24: one window everywhere): ``gtop report``,
    ``gtop export``, and a replay's views and ``--once``
    (:attr:`gtop.session.replay.ReplaySource.window`, where a replay opens, and
    ``tab_window`` in ``gtop/views/tabs/session_data.py``) all take it from here, and
    ``tests/test_one_answer.py`` holds them to the same answer: change the rule here.

    Raises:
        ValueError: a bound is none of those, or the window is empty.
    """
    act = active(rec)
    return resolve(rec, act, steady(rec, act) if act.kind == "active" else act, start, end)


def reach(rec: Recording, act: Window, start: str | None, end: str | None) -> Window:
    """A window holding every window :func:`resolve` can give for ``start``/``end``
    whatever the steady state turns out to be: ``act``, widened to the bounds given in
    seconds (what one read of the recording must cover before the steady state is known).

    Raises:
        ValueError: a bound is not seconds, ``steady`` or ``active``.
    """
    r0, r1 = rec.time_range()
    given = [_seconds(r0, spec) for spec in (start, end) if spec not in (None, *NAMED)]
    t0 = max(min([act.t0, *given]), r0)
    return Window(t0, max(min(max([act.t1, *given]), r1 + 1), t0 + 1), act.kind)


NAMED = ("steady", "active")
"""Window bounds given by name (:func:`resolve`)."""


def _seconds(r0: int, spec: str) -> int:
    """A bound given as seconds from the recording's start ``r0``.

    Raises:
        ValueError: ``spec`` is not a finite number.
    """
    try:
        seconds = float(spec)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds):
        raise ValueError(f"{spec!r} is not seconds from the start, 'steady' or 'active'")
    # past either end of any recording is as good as the end (and fits in int64)
    return seconds_to_ns(r0, min(max(seconds, -MAX_SECONDS), MAX_SECONDS))


def resolve(
    rec: Recording, act: Window, stable: Window, start: str | None, end: str | None
) -> Window:
    """:func:`choose`, given the active window ``act`` and the steady state ``stable``
    (for a reader that found them itself).

    Raises:
        ValueError: a bound is not seconds, ``steady`` or ``active``, or the window is
            empty.
    """
    stable = after_one_time(rec, stable)
    if start is None and end is None:
        return stable
    r0, r1 = rec.time_range()
    named = {"steady": stable, "active": act}

    def bound(spec: str | None, pick: int) -> int:
        if spec is None:
            return (stable.t0, stable.t1)[pick]
        if spec in named:
            return (named[spec].t0, named[spec].t1)[pick]
        return _seconds(r0, spec)

    t0, t1 = max(bound(start, 0), r0), min(bound(end, 1), r1 + 1)
    if t1 <= t0:
        raise ValueError(f"the window {start or ''}..{end or ''} is empty in this recording")
    # a window that is a named one has its kind (the name asked for first): the steady
    # window is the active one when none was found in it, the whole recording is both
    # without GPU work
    same = [
        name
        for name in (start, end, *NAMED)
        if name in named and (named[name].t0, named[name].t1) == (t0, t1)
    ]
    return Window(t0, t1, named[same[0]].kind if same else "given")
