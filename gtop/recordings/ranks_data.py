"""Read what the ranks analysis (:mod:`gtop.analysis.distributed.ranks`) needs from a recording."""

from __future__ import annotations

from typing import Any

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution.records import Records, mark_comm
from gtop.analysis.distributed.ranks import Job, analyse, comm_labels, rank_calls
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.recordings.reader import Recording

RANK_STREAMS = ("thread_state", "kernel", "memcpy", "memset", "untraced")


def inputs(rec: Recording) -> Job:
    """What :func:`gtop.analysis.distributed.ranks.analyse` reads: processes (with their host),
    the ops (communication kernels marked) and thread states, stacks, kernel names."""
    entities = rec.entities()
    host = rec.meta.get("host")
    processes: dict[int, dict[str, Any]] = {}
    for e in entities:
        if e.kind == "process":
            processes[int(e.key)] = {"host": host, **e.value}
    stacks = {int(e.key): e.value for e in entities if e.kind == "stack"}
    names = names_from_entities(entities)
    records = Records.from_streams({n: rec.read(n) for n in RANK_STREAMS if n in rec.streams})
    mark_comm(records.ops, comm_labels(names))
    return Job(processes, records, stacks, names)


def ranks_of(rec: Recording, window: tuple[int, int] | None = None) -> dict[str, Any] | None:
    """The ranks section of ``rec`` over ``window`` (default: the whole recording), or
    None when it holds fewer than two ranks."""
    t0, t1 = window or rec.time_range()
    return analyse(inputs(rec), int(t0), int(t1))


def collective_calls(rec: Recording) -> iv.Spans:
    """The collective calls of all the ranks in ``rec``, as one set of spans."""
    t0, t1 = rec.time_range()
    calls = list(rank_calls(inputs(rec), int(t0), int(t1) + 1).values())
    if not calls:
        return iv.EMPTY
    return iv.union(
        np.concatenate([c.starts for c in calls]), np.concatenate([c.ends for c in calls])
    )


def analyse_recording(path: str, window: tuple[int, int] | None = None) -> dict[str, Any] | None:
    """:func:`ranks_of` the recording at ``path``."""
    with Recording(path) as rec:
        return ranks_of(rec, window)
