"""Read what the ranks analysis (:mod:`gtop.analysis.ranks`) needs from a recording."""

from __future__ import annotations

from typing import Any

from gtop.analysis.cuda_activity import names_from_entities
from gtop.analysis.ranks import analyse
from gtop.recordings.reader import Recording

RANK_STREAMS = ("thread_state", "kernel", "memcpy", "memset")


def ranks_of(rec: Recording, window: tuple[int, int] | None = None) -> dict[str, Any] | None:
    """The ranks section of ``rec`` over ``window`` (default: the whole recording), or
    None when it holds fewer than two ranks."""
    entities = rec.entities()
    host = rec.meta.get("host")
    processes: dict[int, dict[str, Any]] = {}
    for e in entities:
        if e.kind == "process":
            processes[int(e.key)] = {"host": host, **e.value}
    stacks = {int(e.key): e.value for e in entities if e.kind == "stack"}
    t0, t1 = window or rec.time_range()
    data = {n: rec.read(n) for n in RANK_STREAMS if n in rec.streams}
    return analyse(processes, data, stacks, names_from_entities(entities), int(t0), int(t1))


def analyse_recording(path: str, window: tuple[int, int] | None = None) -> dict[str, Any] | None:
    """:func:`ranks_of` the recording at ``path``."""
    with Recording(path) as rec:
        return ranks_of(rec, window)
