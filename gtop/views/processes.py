"""The process rows the views show, derived from a :class:`~gtop.core.model.Model`.

One row per process: its newest ``proc_gpu`` samples (summed over GPUs for memory, the
busiest GPU for SM%), its newest ``proc_host`` sample and its ``process`` entity.
Pure functions, vectorised over the model's recent rows so that hundreds of processes
on eight GPUs cost a few milliseconds per frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gtop.analysis.distributed.roles import tree_order
from gtop.core.model import Model
from gtop.views.fmt import values as fmt

RECENT_S = 5.0
"""A sample older than this (in data time) no longer counts as the process's current value."""

EXITED_KEEP_S = 60.0
"""Exited processes stay listed (greyed) this long after they exit."""


@dataclass(frozen=True)
class ProcessRow:
    """What the process table shows for one process; missing numbers are NaN / -1."""

    pid: int
    user: str
    gpus: tuple[int, ...]
    gpu_mem: int
    sm_util: float
    cpu_pct: float
    rss: int
    threads: int
    command: str
    short_command: str
    """The command without the program's directory, for narrow columns."""
    exited: bool
    ppid: int
    role: str = ""
    """What the process is in its job (``rank 0``, ``loader (rank 1)``, ``launcher``:
    :mod:`gtop.analysis.distributed.roles`); empty for a plain process."""

    def matches(self, text: str) -> bool:
        """Case-insensitive substring match on command, user or pid."""
        needle = text.lower()
        return (
            needle in self.command.lower()
            or needle in self.user.lower()
            or (needle in str(self.pid))
        )


def _nan_last(value: float, descending: bool) -> tuple[bool, float]:
    """Sort key that puts missing values last whichever way the column is sorted."""
    absent = fmt.missing(value)
    return (not absent if descending else absent, 0.0 if absent else float(value))


@dataclass(frozen=True)
class Column:
    """A process-table column: header, how to sort by it, default direction."""

    key: str
    label: str
    sort_key: Callable[[ProcessRow, bool], Any]
    descending: bool


COLUMNS: tuple[Column, ...] = (
    Column("pid", "PID", lambda r, _: r.pid, False),
    Column("user", "USER", lambda r, _: r.user, False),
    Column("gpu", "GPU", lambda r, _: r.gpus or (1 << 16,), False),
    Column("gpu_mem", "GPU MEM", lambda r, d: _nan_last(r.gpu_mem, d), True),
    Column("sm", "SM%", lambda r, d: _nan_last(r.sm_util, d), True),
    Column("cpu", "CPU%", lambda r, d: _nan_last(r.cpu_pct, d), True),
    Column("rss", "RSS", lambda r, d: _nan_last(r.rss, d), True),
    Column("threads", "THR", lambda r, d: _nan_last(r.threads, d), True),
    Column("command", "COMMAND", lambda r, _: r.command, False),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)


def column(key: str) -> Column:
    """The column named ``key``.

    Raises:
        KeyError: no such column.
    """
    for col in COLUMNS:
        if col.key == key:
            return col
    raise KeyError(key)


def sort_rows(rows: list[ProcessRow], key: str, reverse: bool) -> list[ProcessRow]:
    """Rows sorted by column ``key``; ``reverse`` flips the column's default direction.

    Missing values go last in both directions; ties break on pid.
    """
    col = column(key)
    descending = col.descending != reverse
    by_pid = sorted(rows, key=lambda r: r.pid)
    return sorted(by_pid, key=lambda r: col.sort_key(r, descending), reverse=descending)


def newest(rows: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The newest row for each distinct ``key`` (rows are in time order)."""
    if not len(rows):
        return rows
    _, first_from_end = np.unique(key[::-1], return_index=True)
    return rows[len(rows) - 1 - first_from_end]


def process_rows(model: Model, include: Iterable[int] = ()) -> list[ProcessRow]:
    """One row per process with a recent sample, per recently exited process, and per
    pid in ``include`` (whether or not it has data)."""
    gpu_rows = model.window("proc_gpu", RECENT_S)
    host_rows = model.window("proc_host", RECENT_S)
    per_gpu: dict[int, list[np.void]] = {}
    if gpu_rows is not None and len(gpu_rows):
        key = gpu_rows["pid"].astype(np.int64) * 4096 + gpu_rows["gpu"]
        for row in newest(gpu_rows, key):
            per_gpu.setdefault(int(row["pid"]), []).append(row)
    host: dict[int, np.void] = {}
    if host_rows is not None and len(host_rows):
        for row in newest(host_rows, host_rows["pid"]):
            host[int(row["pid"])] = row
    entities = model.entity_values("process")
    pids = set(per_gpu) | set(host) | set(include)
    horizon = model.now_ns - int(EXITED_KEEP_S * 1e9)
    for info in entities.values():
        if info.get("exited") and int(info.get("exit_t_ns") or 0) >= horizon:
            pids.add(int(info["pid"]))
    roles = {
        pid: role.label()
        for pid, _, role in tree_order({int(k): v for k, v in entities.items()})
        if role.kind not in ("main", "child")
    }
    return [
        _row(
            pid, per_gpu.get(pid, []), host.get(pid), entities.get(str(pid), {}), roles.get(pid, "")
        )
        for pid in pids
    ]


def grouped(rows: list[ProcessRow]) -> list[tuple[int, ProcessRow]]:
    """``(depth, row)``: each process right after its parent when the parent is listed,
    siblings and roots in the order given (the table's sort)."""
    listed = {r.pid for r in rows}
    children: dict[int, list[ProcessRow]] = {}
    roots = []
    for r in rows:
        if r.ppid in listed and r.ppid != r.pid:
            children.setdefault(r.ppid, []).append(r)
        else:
            roots.append(r)
    out: list[tuple[int, ProcessRow]] = []
    stack = [(0, r) for r in reversed(roots)]
    seen: set[int] = set()
    while stack:
        depth, row = stack.pop()
        if row.pid in seen:
            continue
        seen.add(row.pid)
        out.append((depth, row))
        stack.extend((depth + 1, c) for c in reversed(children.get(row.pid, [])))
    out += [(0, r) for r in rows if r.pid not in seen]  # a cycle of ppids: flat
    return out


def _row(
    pid: int, gpu: list[np.void], host: np.void | None, info: dict[str, Any], role: str = ""
) -> ProcessRow:
    mems = [int(r["gpu_mem"]) for r in gpu if r["gpu_mem"] >= 0]
    sms = [float(r["sm_util"]) for r in gpu if not math.isnan(r["sm_util"])]
    exited = bool(info.get("exited"))
    return ProcessRow(
        pid=pid,
        user=info.get("user") or fmt.NA,
        gpus=tuple(sorted(int(r["gpu"]) for r in gpu)),
        gpu_mem=sum(mems) if mems else -1,
        sm_util=max(sms) if sms else math.nan,
        cpu_pct=math.nan if host is None or exited else float(host["cpu_pct"]),
        rss=-1 if host is None or exited else int(host["rss"]),
        threads=-1 if host is None or exited else int(host["threads"]),
        command=fmt.command(info.get("cmdline"), info.get("name")),
        short_command=fmt.command(info.get("cmdline"), info.get("name"), short=True),
        exited=exited,
        ppid=int(info.get("ppid") or -1),
        role=role,
    )


def descendants(model: Model, pid: int) -> list[tuple[int, dict[str, Any]]]:
    """Known descendants of ``pid`` as ``(depth, entity value)``, depth-first, by pid."""
    children: dict[int, list[dict[str, Any]]] = {}
    for info in model.entity_values("process").values():
        parent = info.get("ppid")
        if parent is not None:
            children.setdefault(int(parent), []).append(info)
    out: list[tuple[int, dict[str, Any]]] = []
    stack = [(1, c) for c in sorted(children.get(pid, []), key=lambda c: -c["pid"])]
    seen = {pid}
    while stack:
        depth, info = stack.pop()
        if info["pid"] in seen:
            continue
        seen.add(info["pid"])
        out.append((depth, info))
        kids = sorted(children.get(int(info["pid"]), []), key=lambda c: -c["pid"])
        stack.extend((depth + 1, c) for c in kids)
    return out
