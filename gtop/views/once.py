"""One frame of the overview as plain text or JSON (``gtop --once [--json]``), for scripts
and for output that is not a terminal: like ``nvidia-smi`` or ``nvitop --once``.

:func:`frame` reads a :class:`~gtop.core.model.Model` into plain data (units in the key
names, missing values as null); :func:`format_frame` lays that out in at most 100
columns, without colour.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from gtop.core.model import Model
from gtop.core.safe_text import shown_tree
from gtop.views.fmt import values as fmt
from gtop.views.processes import RECENT_S, process_rows, sort_rows

GPU_FIELDS = {
    "util_gpu": "util_gpu_pct",
    "util_mem": "util_mem_pct",
    "sm_active": "sm_active_pct",
    "sm_occupancy": "sm_occupancy_pct",
    "tensor_active": "tensor_active_pct",
    "mem_used": "mem_used_bytes",
    "mem_total": "mem_total_bytes",
    "power_w": "power_w",
    "power_limit_w": "power_limit_w",
    "temp_c": "temp_c",
    "fan_pct": "fan_pct",
    "clock_sm_mhz": "clock_sm_mhz",
    "clock_mem_mhz": "clock_mem_mhz",
    "pcie_tx_bps": "pcie_tx_bytes_per_s",
    "pcie_rx_bps": "pcie_rx_bytes_per_s",
}
"""``gpu`` stream fields shown, and their JSON names (the unit in the name)."""


def _value(value: Any) -> float | int | None:
    """A JSON number, or None for a missing value (NaN, or -1 in an integer field)."""
    if isinstance(value, (np.integer, int)):
        return None if value < 0 else int(value)
    value = float(value)
    return None if math.isnan(value) else value


def frame(model: Model, source: str, gpus: frozenset[int] | None = None) -> dict[str, Any]:
    """The overview now: every GPU's newest sample and every process's row.

    ``gpus``: only these GPU indices (and processes on them, or on none), else all.
    """
    latest = model.latest("gpu", "gpu", RECENT_S)
    devices = {int(d.get("index", 0)): d for d in model.devices()}
    shown = sorted(set(devices) | set(latest))
    if gpus is not None:
        shown = [i for i in shown if i in gpus]
    out_gpus = []
    for index in shown:
        device = devices.get(index, {})
        entry: dict[str, Any] = {
            "index": index,
            "name": device.get("name"),
            "uuid": device.get("uuid"),
        }
        row = latest.get(index)
        for field, key in GPU_FIELDS.items():
            entry[key] = None if row is None else _value(row[field])
        out_gpus.append(entry)
    processes = []
    for r in sort_rows(process_rows(model), "gpu_mem", reverse=False):
        if gpus is not None and r.gpus and not set(r.gpus) & gpus:
            continue
        processes.append(
            {
                "pid": r.pid,
                "user": r.user,
                "gpus": list(r.gpus),
                "gpu_mem_bytes": _value(r.gpu_mem),
                "sm_util_pct": _value(r.sm_util),
                "cpu_pct": _value(r.cpu_pct),
                "rss_bytes": _value(r.rss),
                "threads": _value(r.threads),
                "exited": r.exited,
                "command": r.command,
            }
        )
    return {
        "source": source,
        "time_ns": model.now_ns,
        "gpus": out_gpus,
        "processes": processes,
        "drops": model.drops(),
    }


def target_answer(model: Model, source: Any) -> dict[str, Any] | None:
    """The target's verdict as the process screen's verdict line gives it, over the same
    window (:func:`~gtop.views.tabs.session_data.tab_window`: a replay at the report's
    window covers it, as ``gtop report`` does); None without a target process."""
    from gtop.views.tabs.gpu_time_tab import gpu_time, take_snapshot
    from gtop.views.tabs.verdict_line import window_verdict

    pid = (getattr(source, "meta", {}).get("target") or {}).get("pid")
    if pid is None:
        return None
    snap = take_snapshot(model, int(pid), source, source.meta.get("agent_error"))
    result = gpu_time(snap, int(pid))
    verdict = window_verdict(snap, int(pid))
    window = snap.window
    t0, t1 = (window.t0, window.t1) if result is None else (result.result.t0, result.result.t1)
    origin = window.origin if window.origin is not None else t1
    return {
        "pid": int(pid),
        "window": {
            "kind": window.kind or "last",
            "label": window.label(t0, t1) if result is None else result.label,
            "from_s": round((t0 - origin) / 1e9, 3),
            "to_s": round((t1 - origin) / 1e9, 3),
        },
        "gar": None if result is None else round(result.result.gar, 4),
        "verdict": None if verdict is None else verdict.as_json(),
        "reason": None if verdict is not None else snap.agent_reason,
    }


def _gpu_line(gpu: dict[str, Any]) -> str:
    used, total = gpu["mem_used_bytes"], gpu["mem_total_bytes"]
    mem_pct = None if used is None or not total else 100 * used / total
    power = f"{fmt.num(gpu['power_w'])}/{fmt.num(gpu['power_limit_w'], 'W')}"
    return (
        f"GPU {gpu['index']} {gpu['name'] or 'GPU'}  util {fmt.pct(gpu['util_gpu_pct'])}"
        f"  mem {fmt.size(used)} / {fmt.size(total)} ({fmt.pct(mem_pct)})"
        f"  {power}  {fmt.num(gpu['temp_c'], '°C')}"
    )


def format_frame(data: dict[str, Any]) -> str:
    """:func:`frame`'s data as text: a header, one line per GPU, then the process table."""
    data = shown_tree(data)  # names from the targets are shown, never obeyed
    lines = [f"gtop · {data['source']}"]
    lines += [_gpu_line(g) for g in data["gpus"]] or ["no GPU samples"]
    lines.append("")
    lines.append(
        f"{'PID':>7} {'USER':<10} {'GPU':<5} {'GPU MEM':>9} {'SM%':>5} {'CPU%':>6} "
        f"{'RSS':>9} {'THR':>4}  COMMAND"
    )
    for p in data["processes"]:
        lines.append(
            f"{p['pid']:>7} {p['user'][:10]:<10} {','.join(map(str, p['gpus'])) or '-':<5} "
            f"{fmt.size(p['gpu_mem_bytes']):>9} {fmt.pct(p['sm_util_pct']):>5} "
            f"{fmt.num(p['cpu_pct'], digits=1):>6} {fmt.size(p['rss_bytes']):>9} "
            f"{fmt.num(p['threads']):>4}  {p['command'][:60]}{' (exited)' if p['exited'] else ''}"
        )
    if not data["processes"]:
        lines.append("(no processes)")
    answer = data.get("answer")
    if answer is not None:
        lines.append("")
        said = answer["verdict"]["headline"] if answer["verdict"] else answer["reason"]
        lines.append(f"pid {answer['pid']} · {answer['window']['label']} · {said}")
    drops = {k: v for k, v in data["drops"].items() if v}
    if drops:
        lines.append("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())))
    return "\n".join(lines)
