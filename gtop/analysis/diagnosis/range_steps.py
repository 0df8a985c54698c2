"""The iteration of a loop from its NVTX ranges: a range the program opens once a step
(``train_step``, ``torch.profiler``'s ``ProfilerStep#12``).

A candidate is a range name (trailing numbers dropped: ``ProfilerStep#12`` and
``ProfilerStep#13`` are one name) on one thread whose instances do not overlap, of which
at least :data:`MIN_STEPS` start in the window, and which together cover at least
:data:`MIN_COVER` of it. Of the candidates, the one covering the most of the window is
the step: a step's own range holds its nested ones (``forward``, ``backward``), so it
covers more than any of them. Without a candidate the caller falls back to the kernel
sequence (:mod:`gtop.analysis.diagnosis.steps`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from gtop.core.hub import Entity

MIN_STEPS = 3
"""Range starts in the window a step range needs (two whole steps between them)."""
MIN_COVER = 0.5
"""The share of the window a step range's instances must cover together."""

_NUMBER = re.compile(r"\d+$")


@dataclass(frozen=True)
class RangeSteps:
    """The steps an NVTX range marks: ``starts`` and ``ends`` (ns, in order) of its
    instances that start in the window, on thread ``tid`` of ``pid``."""

    name: str
    """The range's name, trailing numbers shown as ``N`` (``ProfilerStep#N``)."""
    pid: int
    tid: int
    starts: np.ndarray
    ends: np.ndarray
    cover: float
    """The share of the window its instances cover."""


def step_name(name: str) -> str:
    """A range's name with its trailing number (a step's index) as ``N``."""
    return _NUMBER.sub("N", name)


def range_names(entities: Iterable[Entity]) -> dict[int, str]:
    """NVTX range names by id from ``marker_name`` entities (the latest of each wins)."""
    return {int(e.key): str(e.value.get("name")) for e in entities if e.kind == "marker_name"}


def find_range_steps(
    markers: np.ndarray, names: Mapping[int, str], t0: int, t1: int
) -> RangeSteps | None:
    """The step range of ``[t0, t1)`` among ``markers`` (rows of the ``marker`` stream;
    ``names``: :func:`range_names`), or None when no range marks steps."""
    if not len(markers) or t1 <= t0:
        return None
    rows = markers[(markers["end_ns"] > markers["t_ns"]) & (markers["t_ns"] < t1)]
    rows = rows[rows["end_ns"] > t0]
    if not len(rows):
        return None
    ids = np.unique(rows["name_id"])
    label = {int(i): step_name(names.get(int(i), f"range {int(i)}")) for i in ids}
    keys = np.array([label[int(i)] for i in rows["name_id"]])
    best: RangeSteps | None = None
    for key in np.unique(keys):
        mine = rows[keys == key]
        for pid, tid in {(int(p), int(t)) for p, t in mine[["pid", "tid"]]}:
            found = _candidate(mine[(mine["pid"] == pid) & (mine["tid"] == tid)], t0, t1)
            if found is not None and (best is None or found[2] > best.cover):
                best = RangeSteps(str(key), pid, tid, *found)
    return best


def _candidate(rows: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray, float] | None:
    """One name's ranges on one thread as steps (starts, ends, cover), or None."""
    order = np.argsort(rows["t_ns"], kind="stable")
    s, e = rows["t_ns"][order], rows["end_ns"][order]
    if bool((s[1:] < e[:-1]).any()):  # nested or overlapping: not one per step
        return None
    cover = float((np.minimum(e, t1) - np.maximum(s, t0)).sum()) / (t1 - t0)
    inside = s >= t0
    if int(inside.sum()) < MIN_STEPS or cover < MIN_COVER:
        return None
    return s[inside], e[inside], round(cover, 3)
