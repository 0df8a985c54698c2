"""The summary of a recording (``gtop report``): pure functions over record arrays.

:func:`build_report` returns the JSON document; its top-level keys are a contract that
later versions only extend: ``version``, ``start``, ``duration_s``, ``devices``,
``processes``, ``drops`` (plus ``problems`` and ``advice``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gtop import __version__
from gtop.analysis.distributed.roles import tree_order
from gtop.core.hub import Entity
from gtop.core.pyframe import in_source_file

if TYPE_CHECKING:
    from gtop.analysis.diagnosis.what_if import Change
    from gtop.analysis.kernels.cuda_activity import KernelStats
    from gtop.analysis.window.active_window import Window
    from gtop.analysis.window.one_time import Phase

REPORT_VERSION = 1
"""The version of the report document (``schema_version``; ``docs/report.schema.json``):
keys are only added within a version; a new required key, or a key removed, renamed or
changed in meaning, is the next version."""
MIB = 1 << 20

ATTRIBUTION_STREAMS = (
    "kernel",
    "memcpy",
    "memset",
    "api",
    "sync",
    "thread_state",
    "cpu_sample",
    "untraced",
)
"""What the on-/off-GPU attribution reads (CUPTI activity, host threads, and the spans
kernel sampling left untraced)."""
REPORT_STREAMS = ("gpu", "proc_gpu", "proc_host", "overhead", "marker", *ATTRIBUTION_STREAMS)
"""Every stream :func:`build_report` reads."""


@dataclass(frozen=True)
class KernelDigest:
    """What the report needs of the kernel table, gathered chunk by chunk as it is
    decoded (:func:`gtop.recordings.report_data.read_report_data`), so the whole table
    is never held at once."""

    stats: KernelStats
    ops: np.ndarray
    """The attribution's ops table (:class:`~gtop.analysis.attribution.records.OpsBuilder`)."""


def _stats(values: np.ndarray) -> dict[str, float | None]:
    """mean/min/max/p50/p95 of the valid (non-NaN, non-negative-marker) values."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return {"mean": None, "min": None, "max": None, "p50": None, "p95": None, "n": 0}
    return {
        "mean": round(float(values.mean()), 3),
        "min": round(float(values.min()), 3),
        "max": round(float(values.max()), 3),
        "p50": round(float(np.percentile(values, 50)), 3),
        "p95": round(float(np.percentile(values, 95)), 3),
        "n": len(values),
    }


def _valid_int(values: np.ndarray) -> np.ndarray:
    values = values.astype(np.float64)
    values[values < 0] = np.nan
    return values


def latest_entities(entities: list[Entity], kind: str) -> dict[str, dict[str, Any]]:
    """The last recorded value of each entity of ``kind``."""
    out: dict[str, dict[str, Any]] = {}
    for e in entities:
        if e.kind == kind:
            out[e.key] = e.value
    return out


def device_summaries(gpu: np.ndarray, devices: dict[str, dict[str, Any]]) -> list[dict]:
    out = []
    indices = sorted({int(i) for i in gpu["gpu"]} | {int(k) for k in devices})
    for index in indices:
        rows = gpu[gpu["gpu"] == index]
        info = devices.get(str(index), {})
        out.append(
            {
                "index": index,
                "name": info.get("name"),
                "uuid": info.get("uuid"),
                "samples": len(rows),
                "utilization_pct": _stats(rows["util_gpu"]),
                "memory_utilization_pct": _stats(rows["util_mem"]),
                "sm_active_pct": _stats(rows["sm_active"]),
                "sm_occupancy_pct": _stats(rows["sm_occupancy"]),
                "tensor_active_pct": _stats(rows["tensor_active"]),
                "memory_used_mib": _stats(_valid_int(rows["mem_used"]) / MIB),
                "memory_total_mib": (
                    round(info["mem_total"] / MIB, 1) if info.get("mem_total") else None
                ),
                "power_w": _stats(rows["power_w"]),
                "temperature_c": _stats(rows["temp_c"]),
                "clock_sm_mhz": _stats(rows["clock_sm_mhz"]),
                "throttle_reasons_seen": int(
                    np.bitwise_or.reduce(rows["throttle"][rows["throttle"] > 0])
                )
                if np.any(rows["throttle"] > 0)
                else 0,
            }
        )
    return out


def process_summaries(
    proc_gpu: np.ndarray, proc_host: np.ndarray, processes: dict[str, dict[str, Any]]
) -> list[dict]:
    pids = sorted(
        {int(p) for p in proc_gpu["pid"]}
        | {int(p) for p in proc_host["pid"]}
        | {int(k) for k in processes}
    )
    roles = {
        pid: role.label() for pid, _, role in tree_order({int(k): v for k, v in processes.items()})
    }
    out = []
    for pid in pids:
        info = processes.get(str(pid), {})
        g = proc_gpu[proc_gpu["pid"] == pid]
        h = proc_host[proc_host["pid"] == pid]
        times = np.concatenate([g["t_ns"], h["t_ns"]])
        gpus = []
        for index in sorted({int(i) for i in g["gpu"]}):
            rows = g[g["gpu"] == index]
            gpus.append(
                {
                    "index": index,
                    "memory_used_mib": _stats(_valid_int(rows["gpu_mem"]) / MIB),
                    "sm_utilization_pct": _stats(rows["sm_util"]),
                }
            )
        out.append(
            {
                "pid": pid,
                "name": info.get("name"),
                "user": info.get("user"),
                "cmdline": info.get("cmdline"),
                "role": roles.get(pid),
                "parent": info.get("ppid"),
                "exited": bool(info.get("exited", False)),
                "first_seen_ns": int(times.min()) if len(times) else None,
                "last_seen_ns": int(times.max()) if len(times) else None,
                "gpus": gpus,
                "cpu_percent": _stats(h["cpu_pct"]),
                "rss_mib": _stats(_valid_int(h["rss"]) / MIB),
                "thread_count": _stats(_valid_int(h["threads"])),
            }
        )
    return out


def advice(devices: list[dict], gpu: dict[str, dict[str, Any]]) -> list[str]:
    """Plain-language hints from what the summary shows: a GPU with low utilisation and
    no exact breakdown (``gpu``) is worth recording with its process. Utilisation is
    the breakdown's GAR over the window (what the verdict says), else NVML's mean over
    the recording: a hint over another span than the verdict's contradicted it (GPU-bound
    99% over the busy window, "busy only 37%" over the idle time around it)."""
    hints = []
    for dev in devices:
        entry = gpu.get(str(dev["index"]), {})
        util = dev["utilization_pct"]["mean"]
        where = "of the recording"
        if entry.get("gar") is not None:
            util, where = 100 * entry["gar"], "of the window"
        if util is not None and util < 50 and dev["samples"] > 0 and not entry.get("exact"):
            hints.append(
                f"GPU {dev['index']} was busy only {util:.0f}% {where}: the host may be "
                "starving it (record its process with `gtop record -- CMD` to see why)."
            )
    return hints


UNIT_KEYS = {"on": "on_s", "off": "off_s", "panels": "panels_s"}
"""The breakdown's keys as the report names them, with their unit (issue 17)."""


def with_units(entry: dict[str, Any]) -> dict[str, Any]:
    """A breakdown entry (:func:`gtop.analysis.report.gpu_report.unit_summary`) with its keys
    named as ``gtop report --json`` names them (:data:`UNIT_KEYS`)."""
    return {UNIT_KEYS.get(k, k): v for k, v in entry.items()}


def add_loader_frames(
    verdict: dict[str, Any], threads: list[dict[str, Any]], target_pid: int | None
) -> None:
    """An input-bound verdict's evidence gains what the loader's busiest worker thread
    (the busiest thread outside the target's process) did on-CPU."""
    from gtop.analysis.diagnosis.verdict import top_frames

    workers = [t for t in threads if t["pid"] != target_pid and t["top_stacks"]["on_cpu"]]
    if not workers:
        return
    busiest = max(workers, key=lambda t: t["on_cpu_s"])
    frames = top_frames(busiest["top_stacks"]["on_cpu"][0]["frames"])
    verdict["evidence"].append(
        f"the busiest loader worker (pid {busiest['pid']}) was on-CPU "
        f"{busiest['on_cpu_s']:.2f} s, mostly in {' > '.join(frames)}"
    )


def verdict_section(
    gpu: dict[str, dict[str, Any]], kernels: list[dict], api: list[dict] = ()
) -> dict | None:
    """The ``verdict`` key (:mod:`gtop.analysis.diagnosis.verdict`) for the device with the most
    time explained (the least UNKNOWN), or None without a breakdown."""
    from gtop.analysis.diagnosis.verdict import from_entry

    if not gpu:
        return None
    device, entry = max(
        gpu.items(), key=lambda kv: (kv[1]["duration_s"] - kv[1]["off"]["UNKNOWN"], -int(kv[0]))
    )
    count = sum(k["count"] for k in kernels)
    host_functions = sum(a["calls"] for a in api if "LaunchHostFunc" in a["name"])
    verdict = from_entry(entry, count, sum(k["total_ns"] for k in kernels), host_functions)
    return None if verdict is None else {"device": int(device), **verdict.as_json()}


def threads_section(
    data: dict[str, np.ndarray], entities: list[Entity], time_range: tuple[int, int]
) -> list[dict[str, Any]]:
    """The ``threads`` key: per host thread, on-CPU, runnable and blocked time by reason."""
    from gtop.analysis.host.thread_time import threads_report
    from gtop.core import layouts

    intervals = data.get("thread_state")
    if intervals is None or not len(intervals):
        return []
    samples = data.get("cpu_sample", layouts.CPU_SAMPLE.empty(0))
    stacks = {int(e.key): e.value for e in entities if e.kind == "stack"}
    names = {int(k): v.get("name") for k, v in latest_entities(entities, "thread").items()}
    t0, t1 = time_range
    return threads_report(intervals, samples, stacks, names, t0, t1 + 1)


def stack_frames(entities: list[Entity]) -> dict[int, list[str]]:
    """Stack frames by stack id, from ``stack`` entities."""
    return {int(e.key): list(e.value.get("frames", [])) for e in entities if e.kind == "stack"}


def gpu_section(
    meta: dict[str, Any],
    data: dict[str, np.ndarray],
    entities: list[Entity],
    time_range: tuple[int, int],
    ops: np.ndarray | None = None,
) -> dict[str, dict[str, Any]]:
    """The ``gpu`` key: exact on/off-GPU attribution from CUPTI records when the
    recording has them, else the NVML-based approximation (``exact`` false).
    ``ops``: the ops table already built (:class:`KernelDigest`)."""
    from gtop.analysis.attribution.approximate import approximate
    from gtop.analysis.attribution.own_cost import charge, own_seconds
    from gtop.analysis.attribution.records import Records, mark_comm
    from gtop.analysis.distributed.ranks import comm_labels
    from gtop.analysis.kernels.cuda_activity import names_from_entities
    from gtop.analysis.report.gpu_report import gpu_report, unit_summary

    t0, t1 = time_range
    if t1 <= t0:
        return {}
    records = Records.from_streams({k: v for k, v in data.items() if len(v)}, ops)
    stacks = stack_frames(entities)
    names = names_from_entities(entities)
    if len(records.ops):
        mark_comm(records.ops, comm_labels(names))
        own = own_seconds(entities, t0, t1 + 1)
        return {
            dev: charge(entry, own) if own > 0 else entry
            for dev, entry in gpu_report(records, t0, t1 + 1, names, stacks).items()
        }
    gpu = data.get("gpu")
    if gpu is None or not len(gpu):
        return {}
    target = meta.get("target") or {}
    tid = int(target.get("pid") or -1)
    return {
        str(dev): unit_summary(approximate(gpu, records, dev, tid, t0, t1 + 1, stacks).summary())
        for dev in sorted({int(d) for d in gpu["gpu"]})
    }


STARTUP_DEPTH = 2
"""Outermost Python frames that name what the startup phase did (``<module> (train.py)
> <module> (torch/__init__.py)``: importing torch)."""


def startup_activity(
    states: np.ndarray, samples: np.ndarray, stacks: dict[int, dict], tid: int, top: int = 3
) -> list[dict[str, Any]]:
    """What thread ``tid`` did on-CPU, grouped by its outermost :data:`STARTUP_DEPTH`
    Python frames (stacks without any: by their innermost user-space frame), widest
    first."""
    from gtop.analysis.diagnosis.verdict import top_frames
    from gtop.analysis.host.thread_time import fold

    groups: dict[tuple[str, ...], float] = {}
    mine = fold(states[states["tid"] == tid], samples[samples["tid"] == tid], stacks, off_cpu=False)
    for frames, seconds in mine.items():
        py = tuple(f for f in frames if in_source_file(f))[:STARTUP_DEPTH]
        native = tuple(f"[native] {f}" for f in top_frames(frames[1:], 1))
        key = py or native or ("[no frames]",)
        groups[key] = groups.get(key, 0.0) + seconds
    ranked = sorted(groups.items(), key=lambda kv: -kv[1])[:top]
    return [{"frames": list(k), "seconds": round(v, 3)} for k, v in ranked]


def phases_section(
    recorded: tuple[int, int],
    active: Window,
    window: Window,
    startup: dict[str, np.ndarray],
    stacks: dict[int, dict],
    target_pid: int | None,
    one_time: Sequence[Phase] = (),
) -> list[dict[str, Any]]:
    """The ``phases`` key, in seconds from the recording's start: ``startup`` (before the
    target's first GPU work: starting, importing, building its model), ``warm-up`` (from
    it to the window), the window diagnosed (named by its kind), ``wind-down`` (from the
    window to the last GPU work) and ``after``; empty ones left out. The startup phase
    names the target's busiest thread then, and what it did on-CPU
    (:func:`startup_activity`), from ``startup``'s ``thread_state``/``cpu_sample`` rows.
    ``one_time``: compilation, autotuning, checkpoints and evaluation passes found
    (:mod:`gtop.analysis.window.one_time`), each with its cost and usual remedy, in time order
    among the others (they overlap them: a compile is part of the warm-up)."""
    from gtop.analysis.host.thread_time import clip, thread_totals
    from gtop.core import layouts

    r0, r1 = recorded[0], recorded[1] + 1
    first, last = min(active.t0, window.t0), max(active.t1, window.t1)
    spans = [
        ("startup", r0, first, "before the first GPU work: starting, importing, building"),
        ("warm-up", first, window.t0, "GPU work before the steady state"),
        (window.kind, window.t0, window.t1, "the window diagnosed"),
        ("wind-down", window.t1, last, "GPU work after the steady state"),
        ("after", last, r1, "after the last GPU work: shutdown, or waiting for the target"),
    ]
    if window.kind == "given":
        spans[1:2] = spans[3:4] = []
    states = clip(startup.get("thread_state", layouts.THREAD_STATE.empty(0)), r0, first)
    samples = startup.get("cpu_sample", layouts.CPU_SAMPLE.empty(0))
    totals = {tid: t for tid, t in thread_totals(states).items() if target_pid in (None, t["pid"])}
    out = []
    for name, a, b, what in spans:
        if b <= a:
            continue
        phase: dict[str, Any] = {
            "name": name,
            "what": what,
            "from_s": round((a - r0) / 1e9, 3),
            "to_s": round((b - r0) / 1e9, 3),
            "seconds": round((b - a) / 1e9, 3),
        }
        if name == "startup" and totals:
            tid = max(totals, key=lambda t: (t == target_pid, totals[t]["on_cpu_s"]))
            phase["thread"] = tid
            phase["on_cpu_s"] = round(totals[tid]["on_cpu_s"], 3)
            phase["top_on_cpu"] = startup_activity(states, samples, stacks, tid)
        out.append(phase)
    out += [one_time_phase(p, r0) for p in one_time]
    out.sort(key=lambda ph: (ph["from_s"], ph.get("one_time", False)))
    return out


def one_time_phase(p: Phase, r0: int) -> dict[str, Any]:
    """A one-time phase as the ``phases`` key holds it (seconds from ``r0``); the ``v``
    screen words the same dict."""
    return {
        "name": p.kind.name,
        "what": f"once: {p.kind.what}",
        "from_s": round((p.t0 - r0) / 1e9, 3),
        "to_s": round((p.t1 - r0) / 1e9, 3),
        "seconds": round(p.seconds, 3),
        "one_time": True,
        "remedy": p.kind.remedy,
    }


def window_section(recorded: tuple[int, int], window: Window) -> dict[str, Any]:
    """The ``window`` key: what the breakdown and the verdict cover, and its ``label``
    (:meth:`~gtop.analysis.window.active_window.Window.label`, as the UI names it)."""
    return {
        "kind": window.kind,
        "label": window.label(recorded[0]),
        "from_s": round((window.t0 - recorded[0]) / 1e9, 3),
        "to_s": round((window.t1 - recorded[0]) / 1e9, 3),
        "duration_s": round(window.duration_ns / 1e9, 3),
    }


def what_if_section(
    data: dict[str, np.ndarray],
    entities: list[Entity],
    time_range: tuple[int, int],
    ops: np.ndarray | None,
    gpu: dict[str, dict[str, Any]],
    verdict: dict[str, Any] | None,
    kernels: list[dict],
    asked: Sequence[Change] = (),
) -> dict[str, Any] | None:
    """The ``what_if`` key (:func:`gtop.analysis.diagnosis.gains.section`) for the verdict's
    device: None without a verdict or exact GPU work."""
    from gtop.analysis.diagnosis import gains
    from gtop.analysis.diagnosis.range_steps import range_names
    from gtop.analysis.diagnosis.what_if import timeline_from_streams
    from gtop.analysis.kernels.cuda_activity import names_from_entities

    if verdict is None or not gpu.get(str(verdict["device"]), {}).get("exact"):
        return None
    entry = gpu[str(verdict["device"])]
    t0, t1 = time_range
    tl = timeline_from_streams(
        data,
        ops,
        t0,
        t1 + 1,
        names_from_entities(entities),
        stack_frames(entities),
        int(verdict["device"]),
        range_names(entities),
    )
    if tl is None:
        return None
    top = kernels[0]["name"] if kernels else None
    return gains.section(tl, entry["off"], entry["duration_s"], top, asked, entry["gar"])


def ranks_section(
    meta: dict[str, Any],
    data: dict[str, np.ndarray],
    entities: list[Entity],
    time_range: tuple[int, int],
    ops: np.ndarray | None = None,
) -> dict[str, Any] | None:
    """The ``ranks`` key (:func:`gtop.analysis.distributed.ranks.analyse`): None unless the
    recording holds two ranks or more."""
    from gtop.analysis.attribution.records import Records, mark_comm
    from gtop.analysis.distributed.ranks import Job, analyse, comm_labels
    from gtop.analysis.distributed.roles import ranks as rank_pids
    from gtop.analysis.kernels.cuda_activity import names_from_entities
    from gtop.core import layouts

    processes = {
        int(k): {"host": meta.get("host"), **v}
        for k, v in latest_entities(entities, "process").items()
    }
    if len(rank_pids(processes)) < 2:
        return None  # analyse's answer, without a second projection of every stream
    names = names_from_entities(entities)
    # the ranks read the ops, the thread states and the untraced spans
    wanted = {
        s.name
        for s in (
            layouts.KERNEL,
            layouts.MEMCPY,
            layouts.MEMSET,
            layouts.THREAD_STATE,
            layouts.UNTRACED,
        )
    }
    records = Records.from_streams({k: v for k, v in data.items() if len(v) and k in wanted}, ops)
    mark_comm(records.ops, comm_labels(names))
    stacks = {int(e.key): e.value for e in entities if e.kind == "stack"}
    t0, t1 = time_range
    return analyse(Job(processes, records, stacks, names), t0, t1 + 1)


def cuda_version(value: str | int | None) -> str | None:
    """The CUDA version as NVML's collector writes it (``"13.0"``): a recording may hold
    the driver API's integer instead (13000, as probes_triton.gtop does)."""
    return f"{value // 1000}.{value % 1000 // 10}" if isinstance(value, int) else value


def build_report(
    meta: dict[str, Any],
    data: dict[str, np.ndarray],
    entities: list[Entity],
    problems: list[str],
    time_range: tuple[int, int],
    kernels: KernelDigest | None = None,
    recorded: tuple[int, int] | None = None,
    asked: Sequence[Change] = (),
) -> dict[str, Any]:
    """The report document for a recording's metadata, streams and entities (the kernel
    table as ``data["kernel"]`` or, gathered already, as ``kernels``) over ``time_range``
    (first and last ns); ``start`` and ``duration_s`` are those of ``recorded`` (the
    whole recording's range) when given; ``asked``: ``--what-if`` changes to predict."""
    from gtop.analysis.attribution import untraced
    from gtop.analysis.report.agent_cost import report_section
    from gtop.core import layouts

    def stream(spec: Any) -> np.ndarray:
        return data.get(spec.name, spec.empty(0))

    r0, r1 = recorded or time_range
    wall0 = meta.get("clock", {}).get("realtime_minus_monotonic_ns")
    start = None
    if wall0 is not None and r0:
        start = dt.datetime.fromtimestamp((r0 + wall0) / 1e9, dt.timezone.utc).isoformat()
    devices = device_summaries(stream(layouts.GPU), latest_entities(entities, "device"))
    drops = {k: int(v) for k, v in (meta.get("drops") or {}).items()}
    from gtop.analysis.kernels.cuda_activity import kernels_report, names_from_entities

    activity = kernels_report(
        stream(layouts.KERNEL),
        stream(layouts.MEMCPY),
        stream(layouts.API),
        names_from_entities(entities),
        kernels.stats if kernels is not None else None,
        untraced.spans_by_pid(untraced.from_stream(stream(layouts.UNTRACED)), time_range[1] + 1),
    )
    gpu = gpu_section(
        meta, data, entities, time_range, kernels.ops if kernels is not None else None
    )
    verdict = verdict_section(gpu, activity["kernels"], activity["api"])
    threads = threads_section(data, entities, time_range)
    if verdict is not None and verdict["kind"] == "input-bound":
        add_loader_frames(verdict, threads, (meta.get("target") or {}).get("pid"))
    ops = kernels.ops if kernels is not None else None
    what_if = what_if_section(
        data, entities, time_range, ops, gpu, verdict, activity["kernels"], asked
    )
    if verdict is not None and what_if is not None:
        verdict["gains"] = what_if["recommendations"]
    return {
        "version": __version__,
        "schema_version": REPORT_VERSION,
        "format_version": meta.get("format_version"),
        "start": start,
        "duration_s": round((r1 - r0) / 1e9, 3),
        "host": meta.get("host"),
        "driver_version": meta.get("driver_version"),
        "cuda_version": cuda_version(meta.get("cuda_version")),
        "target": meta.get("target"),
        "complete": bool(meta.get("closed", False)),
        "devices": devices,
        "processes": process_summaries(
            stream(layouts.PROC_GPU),
            stream(layouts.PROC_HOST),
            latest_entities(entities, "process"),
        ),
        "drops": drops,
        **({"excerpt": meta["excerpt"]} if meta.get("excerpt") else {}),
        **activity,
        "gpu": {dev: with_units(entry) for dev, entry in gpu.items()},
        "verdict": verdict,
        "what_if": what_if,
        "threads": threads,
        "python_sampler": meta.get("python_sampler"),
        "ranks": ranks_section(
            meta, data, entities, time_range, kernels.ops if kernels is not None else None
        ),
        "agent_cost": report_section(
            latest_entities(entities, "agent_cost"), stream(layouts.OVERHEAD)
        ),
        "problems": problems,
        "advice": advice(devices, gpu),
    }
