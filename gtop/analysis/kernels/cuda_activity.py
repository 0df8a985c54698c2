"""Summaries of CUPTI activity: kernels by name, copies by direction, API calls by thread.

Pure functions over record batches (:data:`~gtop.core.layouts.KERNEL`, ``MEMCPY``,
``API``); :class:`KernelStats` keeps the kernel summary up to date batch by batch for a
live view. The same code serves live, replay and ``gtop report --json``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from gtop.analysis import compiled
from gtop.analysis import intervals as iv
from gtop.analysis.kernels.demangle import demangle, shorten
from gtop.core.hub import Entity
from gtop.core.layouts import ApiClass, CopyKind
from gtop.core.rows import take_rows
from gtop.cupti.decode import current_classes
from gtop.cupti.tables import DRIVER_CBIDS, RUNTIME_CBIDS


@dataclass(frozen=True)
class KernelRow:
    """One kernel name; launch geometry is that of its most recent launch (``grid_varies``:
    its launches had more than one grid)."""

    name: str
    """as CUPTI reports it (mangled for C++ kernels)."""
    demangled: str
    short: str
    count: int
    total_ns: int
    mean_ns: float
    max_ns: int
    min_ns: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int
    static_smem: int
    dynamic_smem: int
    streams: tuple[int, ...]
    grid_varies: bool = False

    def as_json(self) -> dict:
        """As ``gtop report --json`` writes it: shared memory sizes named with their unit."""
        out = asdict(self)
        for key in ("static_smem", "dynamic_smem"):
            out[f"{key}_bytes"] = out.pop(key)
        return out


class _Agg:
    __slots__ = ("count", "geometry", "grid_varies", "max_ns", "min_ns", "streams", "total_ns")

    def __init__(self) -> None:
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0
        self.min_ns = 1 << 62
        self.geometry: tuple = ()
        self.grid_varies = False
        self.streams: set[int] = set()

    def set_geometry(self, geometry: tuple, varies: bool) -> None:
        """The latest launch's geometry; ``varies``: the launches it ends had more than
        one grid."""
        self.grid_varies |= varies or bool(self.geometry and self.geometry[:3] != geometry[:3])
        self.geometry = geometry

    def merge(self, other: _Agg) -> None:
        self.count += other.count
        self.total_ns += other.total_ns
        self.max_ns = max(self.max_ns, other.max_ns)
        self.min_ns = min(self.min_ns, other.min_ns)
        if other.geometry:
            self.set_geometry(other.geometry, other.grid_varies)
        self.streams |= other.streams


GEOMETRY = (
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers",
    "static_smem",
    "dynamic_smem",
)


class KernelStats:
    """Per-kernel totals over every batch added. Incomplete records (no end) are skipped."""

    def __init__(self) -> None:
        self._by_id: dict[int, _Agg] = {}

    def add(self, kernels: np.ndarray) -> None:
        got = compiled.kernel_stats(kernels)  # in C where it loads
        groups = kernel_groups_reference(kernels) if got is None else got
        if groups is None or not len(groups[0]):  # no complete row
            return
        ids, counts, totals, maxes, mins, last, varies, inverse, stream = groups
        streams = _streams_by_group(inverse, stream, len(ids))
        for i, name_id in enumerate(ids.tolist()):
            agg = self._by_id.setdefault(name_id, _Agg())
            agg.count += int(counts[i])
            agg.total_ns += int(totals[i])
            agg.max_ns = max(agg.max_ns, int(maxes[i]))
            agg.min_ns = min(agg.min_ns, int(mins[i]))
            row = kernels[last[i]]
            agg.set_geometry(tuple(int(row[f]) for f in GEOMETRY), bool(varies[i]))
            agg.streams.update(streams[i])

    def merge(self, other: KernelStats) -> None:
        """Add ``other``'s batches as if added here after this one's (in their order)."""
        for name_id, agg in other._by_id.items():
            self._by_id.setdefault(name_id, _Agg()).merge(agg)

    def rows(self, names: Mapping[int, str]) -> list[KernelRow]:
        """One row per kernel name (ids of one name in several processes merged), by
        total time, largest first."""
        by_name: dict[str, _Agg] = {}
        for name_id, agg in self._by_id.items():
            name = names.get(name_id, f"<kernel {name_id}>")
            by_name.setdefault(name, _Agg()).merge(agg)
        rows = [
            KernelRow(
                name=name,
                demangled=demangle(name),
                short=shorten(name),
                count=a.count,
                total_ns=a.total_ns,
                mean_ns=a.total_ns / a.count,
                max_ns=a.max_ns,
                min_ns=a.min_ns,
                grid=a.geometry[0:3],
                block=a.geometry[3:6],
                registers=a.geometry[6],
                static_smem=a.geometry[7],
                dynamic_smem=a.geometry[8],
                streams=tuple(sorted(a.streams)),
                grid_varies=a.grid_varies,
            )
            for name, a in by_name.items()
        ]
        rows.sort(key=lambda r: (-r.total_ns, r.name))
        return rows


def kernel_groups_reference(kernels: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """Per kernel name id of the complete rows of ``kernels`` (ascending): the id, count,
    duration total (float64), longest and shortest duration, last row number and whether
    the rows have more than one grid; per complete row, its id's group and its stream.
    None when no row is complete. In numpy (what :func:`compiled.kernel_stats
    <gtop.analysis.compiled.kernel_stats>` does in C)."""
    columns = ("t_ns", "end_ns", "name_id", "stream", *GEOMETRY[:3])
    done, (t, end, name_ids, stream, *grid) = _complete(kernels, columns)
    if not len(done):
        return None
    dur = end - t
    ids, inverse = iv.dense_index(name_ids)
    n_groups = len(ids)
    counts = np.bincount(inverse)
    totals = np.bincount(inverse, weights=dur)
    maxes = np.full(n_groups, -1, dtype=np.int64)
    np.maximum.at(maxes, inverse, dur)
    mins = np.full(n_groups, 1 << 62, dtype=np.int64)
    np.minimum.at(mins, inverse, dur)
    last = np.zeros(n_groups, dtype=np.int64)
    last[inverse] = done  # each id's latest row
    varies = _grid_varies(grid, inverse, n_groups)
    return ids, counts, totals, maxes, mins, last, varies, inverse, stream


def _grid_varies(grid: list[np.ndarray], inverse: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group (``inverse``: a dense index per row), whether its rows have more than
    one grid (``grid``: the x, y and z columns): whether any differs from the group's
    last one."""
    last = np.zeros(n_groups, dtype=np.int64)
    last[inverse] = np.arange(len(inverse))
    at_last = last[inverse]
    differs = np.zeros(len(inverse), dtype=bool)
    for axis in grid:
        if axis.min() != axis.max():  # a constant axis differs nowhere
            differs |= axis != axis[at_last]
    return np.bincount(inverse[differs], minlength=n_groups) > 0


def _complete(kernels: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Row numbers of the complete kernels (an end, not before the start) and their
    ``names`` columns (views, not copies, when every kernel is complete)."""
    ok = (kernels["end_ns"] >= kernels["t_ns"]) & (kernels["t_ns"] >= 0)
    if bool(ok.all()):
        return np.arange(len(kernels)), [kernels[name] for name in names]
    done = np.flatnonzero(ok)
    return done, [kernels[name][done] for name in names]


def _streams_by_group(group: np.ndarray, stream: np.ndarray, n_groups: int) -> list[list[int]]:
    """The distinct streams of each group (``group``: a dense index per row)."""
    if int(stream.min()) == int(stream.max()):  # one stream (common): no pairs to find
        return [[int(stream[0])] for _ in range(n_groups)]
    sids, sidx = iv.dense_index(stream)
    pairs, _ = iv.dense_index(group * len(sids) + sidx)
    out: list[list[int]] = [[] for _ in range(n_groups)]
    for g, k in zip(*np.divmod(pairs, len(sids)), strict=True):
        out[int(g)].append(int(sids[k]))
    return out


SUMMARY_ROWS = 1 << 20
"""Kernels summed at a time: the per-row temporaries (durations, name indices) of a
block are reused memory, not fresh arrays the size of the whole table."""


def kernel_summary(kernels: np.ndarray, names: Mapping[int, str]) -> list[KernelRow]:
    stats = KernelStats()
    for a in range(0, len(kernels), SUMMARY_ROWS):
        stats.add(kernels[a : a + SUMMARY_ROWS])
    return stats.rows(names)


@dataclass(frozen=True)
class CopyRow:
    kind: str
    count: int
    bytes: int
    total_ns: int
    gb_per_s: float

    def as_json(self) -> dict:
        return asdict(self)


def memcpy_summary(memcpy: np.ndarray) -> list[CopyRow]:
    """Copies by direction (HtoD, DtoH, ...), by total time, largest first."""
    done = memcpy[(memcpy["end_ns"] >= memcpy["t_ns"]) & (memcpy["t_ns"] >= 0)]
    rows = []
    for kind in np.unique(done["copy_kind"]).tolist():
        sel = done[done["copy_kind"] == kind]
        total = int((sel["end_ns"] - sel["t_ns"]).sum())
        nbytes = int(sel["bytes"].sum())
        name = CopyKind(kind).name if kind in CopyKind._value2member_map_ else str(kind)
        rows.append(
            CopyRow(name, len(sel), nbytes, total, nbytes / total if total else float("nan"))
        )
    rows.sort(key=lambda r: -r.total_ns)
    return rows


@dataclass(frozen=True)
class ApiRow:
    """One CUDA API function on one host thread."""

    pid: int
    tid: int
    name: str
    api_class: str
    calls: int
    total_ns: int
    max_ns: int
    calls_per_s: float
    time_pct: float
    """share of the span spent inside this call on this thread."""

    def as_json(self) -> dict:
        return asdict(self)


def api_name(domain: int, cbid: int) -> str:
    table = RUNTIME_CBIDS if domain == 0 else DRIVER_CBIDS
    return table.get(cbid, f"{'runtime' if domain == 0 else 'driver'}#{cbid}")


def api_summary(
    api: np.ndarray, span_ns: int | None = None, off: Mapping[int, iv.Spans] | None = None
) -> list[ApiRow]:
    """Calls and time per (process, thread, function), by time, largest first.

    Args:
        span_ns: the wall-clock span the calls were collected over; by default from the
            first call's start to the last call's end, less the time kernel sampling
            left each process untraced in it (``off``: its spans per pid,
            :func:`gtop.analysis.attribution.untraced.spans_by_pid`).
    """
    complete = (api["end_ns"] >= api["t_ns"]) & (api["t_ns"] >= 0)
    done = api if bool(complete.all()) else take_rows(api, complete)
    if not len(done):
        return []
    lo, hi = int(done["t_ns"].min()), int(done["end_ns"].max())
    spans = {pid: max(hi - lo - iv.clip(s, lo, hi).measure(), 1) for pid, s in (off or {}).items()}
    if span_ns is None:
        span_ns = hi - lo
    span_ns = max(span_ns, 1)
    dur = done["end_ns"] - done["t_ns"]
    uniq, inverse = iv.unique_columns([done["pid"], done["tid"], done["domain"], done["cbid"]])
    calls = np.bincount(inverse)
    totals = np.bincount(inverse, weights=dur)
    maxes = np.zeros(len(uniq), dtype=np.int64)
    np.maximum.at(maxes, inverse, dur)
    stored = np.zeros(len(uniq), dtype=np.uint8)
    stored[inverse] = done["api_class"]
    classes = current_classes(uniq[:, 2], uniq[:, 3], stored)
    rows = [
        ApiRow(
            pid=int(pid),
            tid=int(tid),
            name=api_name(int(domain), int(cbid)),
            api_class=ApiClass(int(classes[i])).name,
            calls=int(calls[i]),
            total_ns=int(totals[i]),
            max_ns=int(maxes[i]),
            calls_per_s=calls[i] * 1e9 / spans.get(int(pid), span_ns),
            time_pct=100.0 * totals[i] / spans.get(int(pid), span_ns),
        )
        for i, (pid, tid, domain, cbid) in enumerate(uniq.tolist())
    ]
    rows.sort(key=lambda r: (-r.total_ns, r.tid, r.name))
    return rows


def kernels_report(
    kernels: np.ndarray,
    memcpy: np.ndarray,
    api: np.ndarray,
    names: Mapping[int, str],
    stats: KernelStats | None = None,
    off: Mapping[int, iv.Spans] | None = None,
) -> dict[str, list[dict]]:
    """The ``kernels``, ``memcpy`` and ``api`` sections of ``gtop report --json``
    (``stats``: the kernels already summed, instead of ``kernels``; ``off``: the
    untraced spans per pid, which API rates leave out)."""
    rows = stats.rows(names) if stats is not None else kernel_summary(kernels, names)
    return {
        "kernels": [r.as_json() for r in rows],
        "memcpy": [r.as_json() for r in memcpy_summary(memcpy)],
        "api": [r.as_json() for r in api_summary(api, off=off)],
    }


def names_from_entities(entities: Iterable[Entity]) -> dict[int, str]:
    """Kernel names by id from ``kernel_name`` entities (the latest of each wins)."""
    return {int(e.key): e.value["name"] for e in entities if e.kind == "kernel_name"}
