"""Probe records as recording streams: one stream per probe record layout.

Each probe's device record (see ``gtop/probes/catalog/``) becomes a stream row of

* ``t_ns`` (int64): the record's ``%globaltimer`` time mapped onto CLOCK_MONOTONIC by
  the ``clock_fit`` entity of key ``globaltimer:<pid>`` (block_sched: the warp's start,
  tensorop: its exit, mem_trace: the access);
* ``pid``, ``launch``: which probed launch (the ``probe_launch`` entity
  ``<pid>:<launch>``) the record belongs to;
* block_sched only: ``end_ns``, the warp's end on CLOCK_MONOTONIC (an interval record);
* the raw record fields, unchanged, except that raw ``%globaltimer`` fields called
  ``x_ns`` are renamed ``gt_x`` (``*_ns`` names are reserved for CLOCK_MONOTONIC int64
  times) and array fields are flattened (``count[2]`` -> ``count2``).

:func:`from_stream` gives back the probe's own record layout, so that the probes'
analysis functions run unchanged on replayed rows.

A ``probe_launch`` entity describes one probed launch: kernel, grid, block, probe,
sampling (1 in ``every`` launches, chosen by the agent to keep the probe's ``cost``
within ``budget`` of the target's time when ``auto``; 1 in ``sample`` accesses), SM
count, argument pointers
(name -> [address, bytes], for DMAT labels), records kept and dropped, the instrumented
module's header (tensor-op classes) and its CLOCK_MONOTONIC span.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gtop.core.hub import Entity
from gtop.core.streams import StreamSpec, register
from gtop.cupti.clock import ClockFit
from gtop.probes.catalog import ENTRIES, PROBES

LAUNCH_KIND = "probe_launch"
CLOCK_KIND = "clock_fit"
DROPPED_FIELDS = ("pad",)


def stream_name(probe: str) -> str:
    return f"probe_{probe}"


def clock_key(pid: int) -> str:
    """Key of the ``clock_fit`` entity mapping a process's GPU %globaltimer."""
    return f"globaltimer:{pid}"


def launch_key(pid: int, launch: int) -> str:
    return f"{pid}:{launch}"


def _raw_name(name: str) -> str:
    return f"gt_{name[:-3]}" if name.endswith("_ns") else name


def _flat_fields(record: np.dtype) -> list[tuple[str, str, str, int | None]]:
    """(stream field, raw field, scalar dtype, index in a subarray or None)."""
    out = []
    for name in record.names or ():
        if name in DROPPED_FIELDS:
            continue
        ftype = record[name]
        if ftype.subdtype is not None:
            base, shape = ftype.subdtype
            for i in range(int(np.prod(shape))):
                out.append((f"{name}{i}", name, base.str, i))
        else:
            out.append((_raw_name(name), name, ftype.str, None))
    return out


def _spec(probe: str) -> StreamSpec:
    record = PROBES[probe].record
    fields = [("t_ns", "<i8"), ("pid", "<i4"), ("launch", "<i4")]
    if probe == "block_sched":
        fields.append(("end_ns", "<i8"))
    fields += [(name, dt) for name, _raw, dt, _i in _flat_fields(record)]
    return register(
        StreamSpec(
            stream_name(probe),
            np.dtype(fields),
            f"{probe} probe records (raw layout of gtop.probes.catalog.{probe}), "
            "t_ns = %globaltimer on CLOCK_MONOTONIC",
        )
    )


SPECS: dict[str, StreamSpec] = {name: _spec(name) for name in ENTRIES}


def to_stream(probe: str, records: np.ndarray, fit: ClockFit, pid: int, launch: int) -> np.ndarray:
    """Stream rows of one launch's ``records`` (the probe's record layout), by time."""
    spec = SPECS[probe]
    out = np.zeros(len(records), dtype=spec.dtype)
    for name, raw, _dt, index in _flat_fields(records.dtype):
        out[name] = records[raw] if index is None else records[raw][:, index]
    out["t_ns"] = fit.to_mono(records[ENTRIES[probe].time_field].astype(np.uint64))
    if probe == "block_sched":
        out["end_ns"] = fit.to_mono(records["end_ns"].astype(np.uint64))
    out["pid"] = pid
    out["launch"] = launch
    return out[np.argsort(out["t_ns"], kind="stable")]


def from_stream(probe: str, rows: np.ndarray) -> np.ndarray:
    """The probe's own record layout back from stream rows (analysis input)."""
    record = PROBES[probe].record
    out = np.zeros(len(rows), dtype=record)
    for name, raw, _dt, index in _flat_fields(record):
        if index is None:
            out[raw] = rows[name]
        else:
            out[raw][:, index] = rows[name]
    return out


@dataclass
class ProbeLaunch:
    """What is known about one probed launch (the ``probe_launch`` entity's value)."""

    pid: int
    launch: int
    kernel: str
    probe: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    sms: int = -1
    gpu: int = 0
    every: int = 1
    auto: bool = False
    cost: float = -1.0  # share of the target's time in the probe's hooks (-1: unknown)
    budget: float = 0.0
    sample: int = 1
    records: int = 0
    dropped: int = 0
    pointers: dict[str, tuple[int, int]] = field(default_factory=dict)
    header: dict[str, Any] = field(default_factory=dict)
    t_start_ns: int = -1
    t_end_ns: int = -1

    @property
    def warps(self) -> int:
        threads = int(np.prod(self.block))
        return int(np.prod(self.grid)) * -(-threads // 32)

    def classes(self) -> list[str]:
        """Tensor-op classes of this kernel, in the probe's index order."""
        for k in self.header.get("kernels", []):
            if k.get("name") == self.kernel or len(self.header.get("kernels", [])) == 1:
                return list(k.get("classes", []))
        return []

    def value(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "launch": self.launch,
            "kernel": self.kernel,
            "probe": self.probe,
            "grid": list(self.grid),
            "block": list(self.block),
            "warps": self.warps,
            "sms": self.sms,
            "gpu": self.gpu,
            "every": self.every,
            "auto": self.auto,
            "cost": self.cost,
            "budget": self.budget,
            "sample": self.sample,
            "records": self.records,
            "dropped": self.dropped,
            "pointers": {k: [int(a), int(n)] for k, (a, n) in self.pointers.items()},
            "header": self.header,
            "t_start_ns": self.t_start_ns,
            "t_end_ns": self.t_end_ns,
        }

    @classmethod
    def from_value(cls, v: dict[str, Any]) -> ProbeLaunch:
        return cls(
            pid=int(v["pid"]),
            launch=int(v["launch"]),
            kernel=str(v["kernel"]),
            probe=str(v["probe"]),
            grid=tuple(v.get("grid", (1, 1, 1))),
            block=tuple(v.get("block", (1, 1, 1))),
            sms=int(v.get("sms", -1)),
            gpu=int(v.get("gpu", 0)),
            every=int(v.get("every", 1)),
            auto=bool(v.get("auto", False)),
            cost=float(v.get("cost", -1.0)),
            budget=float(v.get("budget", 0.0)),
            sample=int(v.get("sample", 1)),
            records=int(v.get("records", 0)),
            dropped=int(v.get("dropped", 0)),
            pointers={k: (int(a), int(n)) for k, (a, n) in v.get("pointers", {}).items()},
            header=dict(v.get("header", {})),
            t_start_ns=int(v.get("t_start_ns", -1)),
            t_end_ns=int(v.get("t_end_ns", -1)),
        )


def launch_batch(
    info: ProbeLaunch, records: np.ndarray, fit: ClockFit
) -> tuple[Entity, np.ndarray]:
    """The ``probe_launch`` entity and the stream rows of one probed launch; fills the
    entity's record count and time span from the records."""
    rows = to_stream(info.probe, records, fit, info.pid, info.launch)
    info.records = len(rows)
    if len(rows):
        info.t_start_ns = int(rows["t_ns"].min())
        info.t_end_ns = int(
            rows["end_ns"].max() if "end_ns" in rows.dtype.names else rows["t_ns"].max()
        )
    t = info.t_start_ns if info.t_start_ns >= 0 else fit.t_ns
    return Entity(LAUNCH_KIND, launch_key(info.pid, info.launch), t, info.value()), rows


def clock_entity(pid: int, fit: ClockFit, method: str) -> Entity:
    """The ``clock_fit`` entity for a process's %globaltimer; ``method`` says how it was
    fitted (stored so a reader knows how far to trust cross-source alignment)."""
    return Entity(CLOCK_KIND, clock_key(pid), fit.t_ns, {**fit.value(), "method": method})
