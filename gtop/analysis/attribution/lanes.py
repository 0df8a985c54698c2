"""Swimlane data: per GPU stream, what ran and why it idled; per host thread, what it did.

A :class:`Lane` is a row of sorted, disjoint, labelled segments over a window. Stream
lanes come from the stream-level partition (:mod:`gtop.analysis.attribution.partition`): kernels,
copies, queueing and dependency gaps; idle time the host is to blame for is ``IDLE``.
Thread lanes come from the thread's states and CUDA API calls (same precedence as the
host-cause rule: a synchronising call first, then blocked/runnable, then other API
calls, then on-CPU).
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import slices
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.host_window import HostIndex
from gtop.analysis.attribution.partition import attribute
from gtop.analysis.attribution.records import Records
from gtop.core.layouts import BlockReason, ThreadState


class Code(IntEnum):
    KERNEL = 0
    COPY = 1
    QUEUE = 2
    STALL = 3
    IDLE = 4
    ON_CPU = 5
    IN_API = 6
    IN_SYNC = 7
    RUNNABLE = 8
    BLOCKED_IO = 9
    BLOCKED_LOCK = 10
    BLOCKED_SLEEP = 11
    BLOCKED_POLL = 12
    BLOCKED_GPU = 13
    BLOCKED_OTHER = 14
    UNKNOWN = 15
    NOT_TRACED = 16
    """A stream's time in a kernel-sampling off phase (:data:`Cause.NOT_TRACED`)."""


CODE_NAMES = {
    Code.KERNEL: "kernel", Code.COPY: "copy", Code.QUEUE: "queued", Code.STALL: "stalled",
    Code.IDLE: "idle", Code.ON_CPU: "on-CPU", Code.IN_API: "in CUDA API",
    Code.IN_SYNC: "in sync call", Code.RUNNABLE: "runnable", Code.BLOCKED_IO: "blocked: I/O",
    Code.BLOCKED_LOCK: "blocked: lock", Code.BLOCKED_SLEEP: "blocked: sleep",
    Code.BLOCKED_POLL: "blocked: poll", Code.BLOCKED_GPU: "blocked: GPU",
    Code.BLOCKED_OTHER: "blocked: other", Code.UNKNOWN: "no data",
    Code.NOT_TRACED: "not traced (sampled)",
}  # fmt: skip

_STREAM_CODE = np.full(len(Cause), Code.IDLE, np.uint8)
_STREAM_CODE[
    [Cause.G_COMP, Cause.G_XFER, Cause.G_QUEUE, Cause.G_STALL, Cause.G_COMM, Cause.NOT_TRACED]
] = [Code.KERNEL, Code.COPY, Code.QUEUE, Code.STALL, Code.KERNEL, Code.NOT_TRACED]
_BLOCKED_CODE = np.full(256, Code.BLOCKED_OTHER, np.uint8)
_BLOCKED_CODE[[BlockReason.IO, BlockReason.LOCK, BlockReason.SLEEP, BlockReason.POLL,
               BlockReason.GPU_WAIT]] = [Code.BLOCKED_IO, Code.BLOCKED_LOCK,
                                         Code.BLOCKED_SLEEP, Code.BLOCKED_POLL,
                                         Code.BLOCKED_GPU]  # fmt: skip


class Lane(NamedTuple):
    label: str
    starts: np.ndarray
    ends: np.ndarray
    codes: np.ndarray

    def cells(self, edges: np.ndarray) -> np.ndarray:
        """The code holding each cell ``[edges[i], edges[i+1])`` longest; -1 if none."""
        occ = slices.occupancy_of(self.starts, self.ends, self.codes, len(Code), edges)
        return np.where(occ.sum(axis=1) > 0, occ.argmax(axis=1), -1)

    def at(self, t: int) -> int:
        """The code at time ``t``, or -1."""
        i = iv.owner(iv.Spans(self.starts, self.ends), np.array([t]))[0]
        return int(self.codes[i]) if i >= 0 else -1


def build_lanes(
    records: Records, t0: int, t1: int, max_threads: int = 16, tids: np.ndarray | None = None
) -> list[Lane]:
    """Stream lanes (by device, pid, stream) then thread lanes (by tid, at most
    ``max_threads``, those with CUDA API calls first; only ``tids`` when given)."""
    lanes = []
    units = sorted(attribute(records, t0, t1, "stream").items())
    pids = len({unit.pid for unit, _ in units})
    for unit, res in units:
        p = res.partition
        # several processes (ranks, a launcher's children): whose stream it is
        label = f"p{unit.pid} s{unit.stream}" if pids > 1 else f"GPU{unit.device} s{unit.stream}"
        lanes.append(Lane(label, p.starts, p.ends, _STREAM_CODE[p.causes]))
    host = HostIndex(records, t0, t1)
    api_tids = iv.unique_sorted(host.apis["tid"].astype(np.int64))
    state_tids = np.setdiff1d(iv.unique_sorted(host.states["tid"].astype(np.int64)), api_tids)
    window = iv.Spans(np.array([t0], np.int64), np.array([t1], np.int64))
    order = np.concatenate((api_tids, state_tids))
    if tids is not None:
        order = order[np.isin(order, tids)]
    for tid in order[:max_threads].tolist():
        a = host.activity(tid, window)
        code = np.select(
            [
                a.in_sync,
                a.state == ThreadState.BLOCKED,
                a.state == ThreadState.RUNNABLE,
                a.in_api,
                a.state == ThreadState.ON_CPU,
            ],
            [Code.IN_SYNC, _BLOCKED_CODE[a.reason], Code.RUNNABLE, Code.IN_API, Code.ON_CPU],
            Code.UNKNOWN,
        ).astype(np.uint8)
        lanes.append(Lane(f"T{tid}", a.starts, a.ends, code))
    return lanes
