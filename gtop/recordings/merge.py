"""``gtop merge``: several recordings of one job (one per host, or per gtop process) into
one, on the first recording's clock, replayed and reported as one job.

Times move by each recording's offset (:mod:`gtop.analysis.distributed.clock_align`). Identifiers
that are only unique inside one recording move into their own range: stack and name ids
always, pids/tids and GPU indices when the recording comes from another boot (another
host: its pid 1234 and GPU 0 are not the first one's). Streams are copied chunk by
chunk, so memory stays bounded by one chunk per stream.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gtop.analysis.distributed.clock_align import Offset, initial, refine
from gtop.core.hub import Entity
from gtop.recordings.ranks_data import collective_calls
from gtop.recordings.reader import Recording
from gtop.recordings.writer import RecordingWriter

TIME_FIELDS = ("t_ns", "end_ns", "queued_ns", "submitted_ns")
PID_FIELDS = ("pid", "tid")
DEVICE_FIELDS = ("gpu", "device")
PID_STRIDE = 1 << 22
"""Linux's largest pid_max: recording i's pids (from another boot) become i·stride+pid."""
DEVICE_STRIDE = 64
ID_STRIDE = 1 << 24
"""Stack and name ids of recording i become i·stride+id."""


class MergeError(Exception):
    """The recordings cannot be merged (message is one line)."""


@dataclass(frozen=True)
class Shift:
    """How one input's times and identifiers move."""

    index: int
    time_ns: int
    own_host: bool
    """From another boot than the first input: pids and GPU indices move too."""

    def pid(self, pid: int) -> int:
        return pid + self.index * PID_STRIDE if self.own_host and pid > 0 else pid

    def device(self, dev: int) -> int:
        return dev + self.index * DEVICE_STRIDE if self.own_host and dev >= 0 else dev

    def ident(self, ident: int) -> int:
        return ident + self.index * ID_STRIDE if ident >= 0 else ident

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """A chunk of any stream, moved."""
        out = rows.copy()
        names = rows.dtype.names or ()
        for f in TIME_FIELDS:
            if f in names and self.time_ns:
                valid = out[f] > 0
                out[f][valid] += self.time_ns
        if self.own_host:
            for f in PID_FIELDS:
                if f in names:
                    valid = out[f] > 0
                    out[f][valid] += self.index * PID_STRIDE
            for f in DEVICE_FIELDS:
                if f in names:
                    valid = out[f] >= 0
                    out[f][valid] += self.index * DEVICE_STRIDE
        for f in ("stack_id", "name_id"):
            if f in names and self.index:
                valid = out[f] >= 0
                out[f][valid] += self.index * ID_STRIDE
        return out

    def entity(self, e: Entity, host: str | None) -> Entity:
        value: Any = e.value
        key = e.key
        if isinstance(value, dict):
            value = dict(value)
            for f in ("pid", "ppid"):
                if isinstance(value.get(f), int):
                    value[f] = self.pid(value[f])
            if e.kind == "device" and isinstance(value.get("index"), int):
                value["index"] = self.device(value["index"])
            if isinstance(value.get("exit_t_ns"), int):
                value["exit_t_ns"] += self.time_ns
            if e.kind == "clock_fit":
                for f in ("t_ns", "offset_ns"):
                    if isinstance(value.get(f), int):
                        value[f] += self.time_ns
            if e.kind == "process":
                value.setdefault("host", host)
        key = _entity_key(self, e.kind, key)
        return Entity(e.kind, key, e.t_ns + self.time_ns, value)


def _entity_key(shift: Shift, kind: str, key: str) -> str:
    """An entity's key in the merged recording (ids and pids moved as in its rows)."""
    try:
        if kind in ("stack", "kernel_name", "marker_name"):
            return str(shift.ident(int(key)))
        if kind in ("process", "agent", "thread"):
            return str(shift.pid(int(key)))
        if kind == "device":
            return str(shift.device(int(key)))
        if kind == "clock_fit" and ":" in key:
            source, pid = key.split(":", 1)
            return f"{source}:{shift.pid(int(pid))}"
        if kind == "probe_launch" and ":" in key:
            pid, rest = key.split(":", 1)
            return f"{shift.pid(int(pid))}:{rest}"
    except ValueError:
        return key
    return key


def offsets(recs: Sequence[Recording]) -> list[Offset]:
    """Each recording's offset onto the first one's clock.

    Raises:
        MergeError: a recording has no clock metadata.
    """
    out = [Offset(0, "reference")]
    ref_calls = None
    for rec in recs[1:]:
        start = initial(recs[0].meta, rec.meta)
        if start is None:
            raise MergeError(f"{rec.path}: no clock offset in its metadata; cannot align it")
        if start.basis != "same boot":
            if ref_calls is None:
                ref_calls = collective_calls(recs[0])
            start = refine(ref_calls, collective_calls(rec), start)
        out.append(start)
    return out


def merge(
    paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], overwrite: bool = False
) -> Path:
    """Write the merged recording of ``paths`` to ``output``.

    Raises:
        MergeError: fewer than two inputs, one given twice or as the output, or one
            that cannot be aligned.
        RecordingError: an input is missing or not a recording.
        FileExistsError: ``output`` exists and ``overwrite`` is false.
    """
    if len(paths) < 2:
        raise MergeError("merge needs two recordings or more")
    given = [Path(p).resolve() for p in paths]
    if len(set(given)) < len(given):
        raise MergeError("a recording is given twice")
    if Path(output).resolve() in given:
        raise MergeError(f"{output} is one of the recordings to merge: write elsewhere")
    recs = [Recording(p) for p in paths]
    try:
        shifts_at = offsets(recs)
        boot0 = (recs[0].meta.get("clock") or {}).get("boot_id")
        sources = []
        for i, (rec, off) in enumerate(zip(recs, shifts_at, strict=True)):
            boot = (rec.meta.get("clock") or {}).get("boot_id")
            same = i == 0 or (boot is not None and boot == boot0)
            sources.append((rec, Shift(i, off.ns, not same), off))
        meta = _meta(sources)
        writer = RecordingWriter(output, meta, overwrite=overwrite)
        layouts: dict[str, np.dtype] = {}
        for rec, shift, _ in sources:
            host = rec.meta.get("host")
            for e in rec.entities():
                writer.add_entity(shift.entity(e, host))
            for stream, dtype in rec.streams.items():
                if layouts.setdefault(stream, dtype) != dtype:
                    raise MergeError(
                        f"{rec.path}: stream {stream!r} has another layout than in "
                        f"{recs[0].path} (recorded by another gtop version)"
                    )
                for chunk in rec.iter_chunks(stream):
                    writer.append(stream, shift.rows(chunk))
                writer.flush([stream])
        writer.close({"closed": all(r.meta.get("closed", False) for r in recs)})
    finally:
        for rec in recs:
            rec.close()
    return Path(output)


def _meta(sources: list[tuple[Recording, Shift, Offset]]) -> dict[str, Any]:
    first = sources[0][0].meta
    devices, seen = [], set()
    for rec, shift, _ in sources:
        for dev in rec.meta.get("devices") or []:
            moved = dict(dev)
            if isinstance(moved.get("index"), int):
                moved["index"] = shift.device(moved["index"])
            if moved.get("index") in seen:
                continue  # the same GPU, recorded by two gtop processes of one boot
            seen.add(moved.get("index"))
            moved.setdefault("host", rec.meta.get("host"))
            devices.append(moved)
    hosts = list(dict.fromkeys(str(rec.meta.get("host")) for rec, _, _ in sources))
    return {
        "host": "+".join(hosts),
        "platform": first.get("platform"),
        "target": first.get("target"),
        "interval_s": first.get("interval_s"),
        "devices": devices,
        "clock": first.get("clock"),
        "merged_from": [
            {
                "file": rec.path.name,
                "host": rec.meta.get("host"),
                "boot_id": (rec.meta.get("clock") or {}).get("boot_id"),
                "offset_ns": off.ns,
                "basis": off.basis,
                "collective_pairs": off.pairs,
                "pid_base": shift.index * PID_STRIDE if shift.own_host else 0,
            }
            for rec, shift, off in sources
        ],
        "drops": _sum_drops(rec.meta.get("drops") or {} for rec, _, _ in sources),
    }


def _sum_drops(parts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for k, v in part.items():
            out[k] = out.get(k, 0) + int(v)
    return out
