"""The slice of each record stream that attribution needs, in compact arrays.

:class:`Records` is built from batches of the shared layouts
(:mod:`gtop.core.layouts`) and keeps only the fields the rules read, so the live
engine can hold a whole window of 100k records/s in little memory. GPU work of all three
kinds (kernels, copies, memsets) goes into one ``ops`` table.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from gtop.analysis import compiled
from gtop.analysis.attribution import untraced
from gtop.core import layouts
from gtop.core.rows import concat_rows, take_rows
from gtop.cupti.decode import current_classes

OP_KERNEL, OP_MEMCPY, OP_MEMSET, OP_COMM = 0, 1, 2, 3
"""Kinds of GPU op; OP_COMM is a communication kernel (:func:`mark_comm`)."""

OP = np.dtype(
    [
        ("t", "<i8"),
        ("end", "<i8"),
        ("queued", "<i8"),
        ("submitted", "<i8"),
        ("pid", "<i4"),
        ("device", "<i2"),
        ("stream", "<u4"),
        ("corr", "<u4"),
        ("kind", "<u1"),  # OP_KERNEL / OP_MEMCPY / OP_MEMSET / OP_COMM
        ("label", "<i8"),  # kernel name_id, CopyKind, or -1 for a memset
        ("graph", "<u4"),  # CUDA graph id of a kernel node, 0 outside graphs
    ]
)
API = np.dtype(
    [
        ("t", "<i8"),
        ("end", "<i8"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("corr", "<u4"),
        ("cls", "<u1"),  # ApiClass
    ]
)
WAIT = np.dtype([("t", "<i8"), ("pid", "<i4"), ("stream", "<u4")])
SYNC = np.dtype([("t", "<i8"), ("end", "<i8"), ("pid", "<i4"), ("type", "<u1")])
"""A CUPTI synchronisation (stream, event or context synchronise; stream wait event)."""
STATE = np.dtype(
    [
        ("t", "<i8"),
        ("end", "<i8"),
        ("pid", "<i4"),
        ("tid", "<i4"),
        ("state", "<u1"),
        ("reason", "<u1"),
        ("stack_id", "<i4"),
    ]
)
SAMPLE = np.dtype([("t", "<i8"), ("pid", "<i4"), ("tid", "<i4"), ("stack_id", "<i4")])

STREAM_WAIT_EVENT = 2
"""CUpti_ActivitySynchronizationType of cudaStreamWaitEvent."""


def _keep(table: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return table if bool(mask.all()) else take_rows(table, mask)


PROJECT_ROWS = 1 << 15
"""Rows projected at a time: a block's source and target rows stay in cache while
every field is copied (a field at a time over a whole table streams it once per
field)."""


def _project(
    src: np.ndarray, dtype: np.dtype, renames: dict[str, str], out: np.ndarray | None = None
) -> np.ndarray:
    """The fields of ``dtype`` taken from ``src`` (by name, or as ``renames`` says), zero
    where ``src`` has no such field; into ``out`` (zeroed, ``len(src)`` rows) when given."""
    if out is None:
        out = np.zeros(len(src), dtype)
    pairs = [
        (name, renames.get(name, name))
        for name in dtype.names or ()
        if renames.get(name, name) in (src.dtype.names or ())
    ]
    project_reference(src, out, compiled.project(src, out, pairs))  # the rest in numpy
    return out


def project_reference(src: np.ndarray, out: np.ndarray, pairs: list[tuple[str, str]]) -> None:
    """Field ``source`` of ``src`` into field ``name`` of ``out`` for each ``(name,
    source)`` of ``pairs``, in numpy (what :func:`compiled.project
    <gtop.analysis.compiled.project>` does in C for integer fields)."""
    for a in range(0, len(src), PROJECT_ROWS):
        s, o = src[a : a + PROJECT_ROWS], out[a : a + PROJECT_ROWS]
        for name, source in pairs:
            o[name] = s[source]


_OP_SOURCES = (
    (layouts.KERNEL.name, OP_KERNEL),
    (layouts.MEMCPY.name, OP_MEMCPY),
    (layouts.MEMSET.name, OP_MEMSET),
)


class OpsBuilder:
    """One ops table: the kernels (added batch by batch, e.g. as a recording's chunks
    are decoded), then the memcpy and memset batches, filled in place (a table per kind
    joined afterwards would be a second copy of every op). ``capacity``: rows of all
    kinds (untouched rows cost no memory)."""

    def __init__(self, capacity: int) -> None:
        self.out = np.zeros(capacity, OP)
        self.filled = 0

    def add_kernels(self, kernels: np.ndarray) -> None:
        _fill_ops(self.out[self.filled : self.filled + len(kernels)], kernels, OP_KERNEL)
        self.filled += len(kernels)

    def keep_kernels(self, t0: int, t1: int) -> None:
        """Keep the kernels added that meet ``[t0, t1)`` (start before ``t1``, end after
        ``t0``: a clipped recording's rows), in order, in place."""
        raw = self.out.view(np.dtype((np.void, OP.itemsize)))
        kept = 0
        for a in range(0, self.filled, PROJECT_ROWS):
            block = self.out[a : min(a + PROJECT_ROWS, self.filled)]
            keep = (block["t"] < t1) & (block["end"] > t0)
            if kept == a and bool(keep.all()):  # nothing dropped yet: the rows stay
                kept += len(block)
                continue
            rows = raw[a : a + len(block)][keep]
            raw[kept : kept + len(rows)] = rows
            kept += len(rows)
        self.filled = kept

    def finish(self, batches: dict[str, np.ndarray]) -> np.ndarray:
        """The table: the kernels in the order added, then ``batches``' copies and
        memsets."""
        start = self.filled
        for name, kind in _OP_SOURCES[1:]:
            src = batches.get(name)
            if src is not None and len(src):
                _fill_ops(self.out[start : start + len(src)], src, kind)
                start += len(src)
        return self.out[:start]


def _ops(batches: dict[str, np.ndarray]) -> np.ndarray:
    """One ops table from the kernel, memcpy and memset batches, in that order."""
    builder = OpsBuilder(sum(len(batches.get(name, ())) for name, _ in _OP_SOURCES))
    kernels = batches.get(layouts.KERNEL.name)
    if kernels is not None and len(kernels):
        builder.add_kernels(kernels)
    return builder.finish(batches)


def _fill_ops(out: np.ndarray, src: np.ndarray, kind: int) -> None:
    renames = {"t": "t_ns", "end": "end_ns", "corr": "correlation"}
    if kind == OP_KERNEL:
        renames |= {
            "queued": "queued_ns",
            "submitted": "submitted_ns",
            "label": "name_id",
            "graph": "graph_id",
        }
    elif kind == OP_MEMCPY:
        renames["label"] = "copy_kind"
    _project(src, OP, renames, out)
    if kind == OP_KERNEL and "graph_node_id" in (src.dtype.names or ()):
        # a whole graph launch traced at graph level (node id 0) is one host launch,
        # like an op outside graphs; only nodes traced one by one share a replay
        out["graph"][src["graph_node_id"] == 0] = 0
    out["kind"] = kind
    if kind == OP_MEMSET:
        out["label"] = -1


def mark_comm(ops: np.ndarray, comm_labels: np.ndarray) -> None:
    """Make the kernels of ``ops`` whose name id is in ``comm_labels`` communication ops
    (in place)."""
    if len(comm_labels) and len(ops):
        hit = (ops["kind"] == OP_KERNEL) & np.isin(ops["label"], comm_labels)
        ops["kind"][hit] = OP_COMM


def _apis(api: np.ndarray) -> np.ndarray:
    """The API table; each call's class from its callback id where the batch has it
    (:func:`gtop.cupti.decode.current_classes`)."""
    out = _project(
        api, API, {"t": "t_ns", "end": "end_ns", "corr": "correlation", "cls": "api_class"}
    )
    if {"cbid", "domain"} <= set(api.dtype.names or ()):
        out["cls"] = current_classes(api["domain"], api["cbid"], out["cls"])
    return out


@dataclass
class Records:
    """Compact record arrays (dtypes :data:`OP`, :data:`API`, :data:`WAIT`,
    :data:`SYNC`, :data:`STATE`, :data:`SAMPLE`, :data:`gtop.analysis.attribution.untraced.ROW`),
    in any order."""

    ops: np.ndarray = field(default_factory=lambda: np.empty(0, OP))
    apis: np.ndarray = field(default_factory=lambda: np.empty(0, API))
    waits: np.ndarray = field(default_factory=lambda: np.empty(0, WAIT))
    syncs: np.ndarray = field(default_factory=lambda: np.empty(0, SYNC))
    states: np.ndarray = field(default_factory=lambda: np.empty(0, STATE))
    samples: np.ndarray = field(default_factory=lambda: np.empty(0, SAMPLE))
    untraced: np.ndarray = field(default_factory=lambda: np.empty(0, untraced.ROW))

    @classmethod
    def from_streams(cls, batches: dict[str, np.ndarray], ops: np.ndarray | None = None) -> Records:
        """Build from batches keyed by stream name (``"kernel"``, ``"memcpy"``,
        ``"memset"``, ``"api"``, ``"sync"``, ``"thread_state"``, ``"cpu_sample"``,
        ``"untraced"``); other streams are ignored. ``ops``: the ops table already built
        (:class:`OpsBuilder`), instead of one from the GPU work batches."""
        api = batches.get(layouts.API.name)
        sync = batches.get(layouts.SYNC.name)
        states = batches.get(layouts.THREAD_STATE.name)
        samples = batches.get(layouts.CPU_SAMPLE.name)
        off = batches.get(layouts.UNTRACED.name)
        return cls(
            ops=_ops(batches) if ops is None else ops,
            apis=_apis(api) if api is not None else np.empty(0, API),
            waits=_project(sync[sync["sync_type"] == STREAM_WAIT_EVENT], WAIT, {"t": "t_ns"})
            if sync is not None
            else np.empty(0, WAIT),
            syncs=_project(sync, SYNC, {"t": "t_ns", "end": "end_ns", "type": "sync_type"})
            if sync is not None
            else np.empty(0, SYNC),
            states=_project(states, STATE, {"t": "t_ns", "end": "end_ns"})
            if states is not None
            else np.empty(0, STATE),
            samples=_project(samples, SAMPLE, {"t": "t_ns"})
            if samples is not None
            else np.empty(0, SAMPLE),
            untraced=untraced.from_stream(off) if off is not None else np.empty(0, untraced.ROW),
        )

    @staticmethod
    def concat(parts: list[Records]) -> Records:
        """All rows of ``parts``, in order."""
        return Records(
            **{f.name: concat_rows([getattr(p, f.name) for p in parts]) for f in fields(Records)}
        )

    def keep_after(self, horizon: int) -> Records:
        """Only the rows that end at or after ``horizon`` (instants: at or after it; an
        untraced span still open, too); a table that loses no row is kept as it is, not
        copied."""
        return Records(
            ops=_keep(self.ops, self.ops["end"] >= horizon),
            apis=_keep(self.apis, self.apis["end"] >= horizon),
            waits=_keep(self.waits, self.waits["t"] >= horizon),
            syncs=_keep(self.syncs, self.syncs["end"] >= horizon),
            states=_keep(self.states, self.states["end"] >= horizon),
            samples=_keep(self.samples, self.samples["t"] >= horizon),
            untraced=_keep(
                self.untraced,
                (self.untraced["end"] >= horizon)
                | ((self.untraced["end"] < 0) & ~untraced.superseded(self.untraced)),
            ),
        )

    def rows(self) -> int:
        return sum(len(getattr(self, f.name)) for f in fields(Records))

    def nbytes(self) -> int:
        return sum(getattr(self, f.name).nbytes for f in fields(Records))

    def latest(self) -> int | None:
        """The latest time any row reaches, or None when empty."""
        ends = [
            a[k].max()
            for a, k in (
                (self.ops, "end"),
                (self.apis, "end"),
                (self.waits, "t"),
                (self.syncs, "end"),
                (self.states, "end"),
                (self.samples, "t"),
            )
            if len(a)
        ]
        if len(self.untraced):  # an open span reaches its start; a closed one its end
            ends.append(np.maximum(self.untraced["t"], self.untraced["end"]).max())
        return int(max(ends)) if ends else None
