"""CSV: a directory with one file per stream (``OUT/<stream>.csv``) and one per entity
kind (``OUT/entity_<kind>.csv``: kernel names, stacks, processes, threads, devices …),
so every id in a stream row resolves, and ``OUT/window.csv``: the window the rows cover
(the whole recording, or the one ``--from``/``--to`` chose).

Column names carry their unit (``_ns``, ``_B``, ``_pct``, ``_w``, ``_bps``); enum columns
hold names (``HTOD``, ``BLOCKED``, ``GPU_WAIT``, ``runtime``) rather than numbers; API rows
get a ``function`` column (``cudaLaunchKernel``) and kernel rows a ``kernel`` column
(demangled). Missing values are empty cells.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from enum import IntEnum
from typing import Any

import numpy as np

from gtop.analysis.kernels.cuda_activity import api_name
from gtop.analysis.kernels.demangle import demangle
from gtop.core.layouts import ApiClass, BlockReason, CopyKind, ThreadState
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.window import covered
from gtop.recordings.reader import Recording

BYTES_PER_ROW = 100

UNITS = {
    "mem_used": "mem_used_B",
    "mem_total": "mem_total_B",
    "gpu_mem": "gpu_mem_B",
    "rss": "rss_B",
    "bytes": "bytes_B",
    "static_smem": "static_smem_B",
    "dynamic_smem": "dynamic_smem_B",
    "util_gpu": "util_gpu_pct",
    "util_mem": "util_mem_pct",
    "sm_active": "sm_active_pct",
    "sm_occupancy": "sm_occupancy_pct",
    "tensor_active": "tensor_active_pct",
    "sm_util": "sm_util_pct",
    "mem_util": "mem_util_pct",
    "enc_util": "enc_util_pct",
    "dec_util": "dec_util_pct",
}
"""Columns whose unit is not in their recorded name."""

ENUMS: dict[str, type[IntEnum] | dict[int, str]] = {
    "copy_kind": CopyKind,
    "state": ThreadState,
    "reason": BlockReason,
    "api_class": ApiClass,
    "domain": {0: "runtime", 1: "driver"},
}


def _enum_names(enum: type[IntEnum] | dict[int, str]) -> dict[int, str]:
    return {int(m): m.name for m in enum} if isinstance(enum, type) else enum


def _column(values: np.ndarray, enum: dict[int, str] | None) -> list:
    """One column of a chunk as cells: enum names, float32 at float32 precision (0.1, not
    0.10000000149011612), missing floats empty."""
    if enum is not None:
        return [enum.get(v, v) for v in values.tolist()]
    if values.dtype.kind == "f":
        text = np.char.mod("%.7g" if values.dtype == np.float32 else "%r", values)
        return np.where(np.isfinite(values), text, "").tolist()
    return values.tolist()


def _extra_columns(rec: Recording, stream: str) -> dict[str, Callable[[np.ndarray], list[str]]]:
    """Columns derived from ids: the API function, the kernel name."""
    if stream == "api":
        return {
            "function": lambda rows: [
                api_name(d, c) for d, c in zip(rows["domain"].tolist(), rows["cbid"].tolist())
            ]
        }
    if stream == "kernel":
        names = {
            int(e.key): demangle(str(e.value.get("name"))) for e in rec.entities("kernel_name")
        }
        return {"kernel": lambda rows: [names.get(i, "") for i in rows["name_id"].tolist()]}
    return {}


def _write_stream(rec: Recording, stream: str, writer: Any, out: Output) -> int:
    fields = list(rec.streams[stream].names)
    extra = _extra_columns(rec, stream)
    writer.writerow([UNITS.get(f, f) for f in fields] + list(extra))
    enums = {f: _enum_names(ENUMS[f]) for f in fields if f in ENUMS}
    total = 0
    for rows in rec.iter_chunks(stream, reuse=True):
        columns = [_column(rows[f], enums.get(f)) for f in fields]
        writer.writerows(zip(*columns, *(fn(rows) for fn in extra.values())))
        total += len(rows)
        out.advance(len(rows))
    return total


def _entity_value(value: object) -> object:
    if isinstance(value, list):
        return ";".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return "" if value is None else value


def export(rec: Recording, out: Output) -> str:
    total = 0
    for name in rec.streams:
        total += _write_stream(rec, name, csv.writer(out.in_directory(f"{name}.csv")), out)
    kinds: dict[str, list] = {}
    for entity in rec.entities():
        kinds.setdefault(entity.kind, []).append(entity)
    for kind, entities in kinds.items():
        keys: dict[str, None] = {}
        for e in entities:
            keys.update(dict.fromkeys(e.value if isinstance(e.value, dict) else ["value"]))
        writer = csv.writer(out.in_directory(f"entity_{kind}.csv"))
        writer.writerow(["key", "t_ns", *keys])
        for e in entities:
            value = e.value if isinstance(e.value, dict) else {"value": e.value}
            writer.writerow([e.key, e.t_ns, *(_entity_value(value.get(k)) for k in keys)])
    window = covered(rec)
    writer = csv.writer(out.in_directory("window.csv"))  # what the tables cover
    section = window.section()
    writer.writerow(list(section))
    writer.writerow(list(section.values()))
    return (
        f"wrote {total} rows of {len(rec.streams)} streams and {len(kinds)} entity tables, "
        f"{window.label()}"
    )
