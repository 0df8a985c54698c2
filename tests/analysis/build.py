"""Tiny builders of record batches in the shared layouts, for hand-made test cases."""

from __future__ import annotations

from typing import Any

import numpy as np

from gtop.analysis.attribution.records import Records
from gtop.core import layouts
from gtop.core.streams import StreamSpec


def rows(spec: StreamSpec, items: list[dict[str, Any]]) -> np.ndarray:
    """A batch of ``spec`` with one row per dict (unset fields: "no value")."""
    out = spec.empty(len(items))
    for i, item in enumerate(items):
        for k, v in item.items():
            out[k][i] = v
    return out


def kernel(
    t: int,
    end: int,
    *,
    corr: int = 0,
    stream: int = 7,
    pid: int = 100,
    device: int = 0,
    name: int = 1,
    submitted: int = 0,
) -> dict[str, Any]:
    return {
        "t_ns": t,
        "end_ns": end,
        "correlation": corr,
        "stream": stream,
        "pid": pid,
        "device": device,
        "name_id": name,
        "submitted_ns": submitted,
        "queued_ns": 0,
    }


def copy(
    t: int,
    end: int,
    *,
    corr: int = 0,
    stream: int = 7,
    pid: int = 100,
    device: int = 0,
    kind: int = layouts.CopyKind.HTOD,
) -> dict[str, Any]:
    return {
        "t_ns": t,
        "end_ns": end,
        "correlation": corr,
        "stream": stream,
        "pid": pid,
        "device": device,
        "copy_kind": kind,
    }


def api(
    t: int,
    end: int,
    *,
    corr: int = 0,
    tid: int = 100,
    pid: int = 100,
    cls: int = layouts.ApiClass.LAUNCH,
) -> dict[str, Any]:
    return {"t_ns": t, "end_ns": end, "correlation": corr, "tid": tid, "pid": pid, "api_class": cls}


def state(
    t: int, end: int, st: int, *, reason: int = 0, tid: int = 100, pid: int = 100, stack: int = -1
) -> dict[str, Any]:
    return {
        "t_ns": t,
        "end_ns": end,
        "state": st,
        "reason": reason,
        "tid": tid,
        "pid": pid,
        "stack_id": stack,
    }


def wait(t: int, *, stream: int = 7, pid: int = 100) -> dict[str, Any]:
    return {"t_ns": t, "end_ns": t + 1, "stream": stream, "pid": pid, "sync_type": 2}


def sample(t: int, *, tid: int = 100, pid: int = 100, stack: int = -1) -> dict[str, Any]:
    return {"t_ns": t, "tid": tid, "pid": pid, "stack_id": stack, "cpu": 0}


def records(kernels=(), copies=(), apis=(), states=(), waits=(), samples=()) -> Records:
    return Records.from_streams(
        {
            "kernel": rows(layouts.KERNEL, list(kernels)),
            "memcpy": rows(layouts.MEMCPY, list(copies)),
            "api": rows(layouts.API, list(apis)),
            "thread_state": rows(layouts.THREAD_STATE, list(states)),
            "sync": rows(layouts.SYNC, list(waits)),
            "cpu_sample": rows(layouts.CPU_SAMPLE, list(samples)),
        }
    )
