"""UI frame time at 10 fps replaying 8 GPUs × 200 processes (issue 2).

    python benchmarks/ui_frame_time.py                  # 100 frames per case
    python benchmarks/ui_frame_time.py --frames 300 --source recordings/train_loop_nvml.gtop

The load is made from a real recording: every ``gpu`` row is replicated onto 8 GPUs and
the recorded process's ``proc_gpu``/``proc_host`` rows onto 200 processes (spread over
the GPUs, with small time and value offsets), written to a temporary ``.gtop`` with
:class:`~gtop.recordings.writer.RecordingWriter`. The UI runs headless (Textual's pilot),
replaying at ×1 and ticking every 0.1 s; a frame is one tick (poll, model update, view
update, timed alone) plus the layout and paint that follow, until Textual is idle. Wall
time includes the pilot's own wait (see the idle frames, which found no new data and
redraw nothing) and whatever else the machine runs; CPU time is this process's work.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np

from gtop.core.hub import Entity
from gtop.recordings.reader import Recording
from gtop.recordings.writer import RecordingWriter
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp

REPO = Path(__file__).resolve().parent.parent
FPS = 10
BASE_PID = 100_000


def replicate(src: Path, out: Path, gpus: int = 8, procs: int = 200) -> Path:
    """Write ``out``: the GPUs and the first process of ``src`` copied to ``gpus`` GPUs
    and ``procs`` processes (process k on GPU k % gpus, a child of process 0)."""
    with Recording(src) as rec:
        gpu_rows, gpu_proc, host = rec.read("gpu"), rec.read("proc_gpu"), rec.read("proc_host")
        entities = rec.entities()
        meta = {"host": rec.meta.get("host"), "interval_s": rec.meta.get("interval_s")}
    pid = int(np.bincount(gpu_proc["pid"]).argmax())
    gpu_proc, host = gpu_proc[gpu_proc["pid"] == pid], host[host["pid"] == pid]
    device = next(e for e in entities if e.kind == "device").value
    proc = next(e for e in entities if e.kind == "process" and e.key == str(pid)).value
    writer = RecordingWriter(out, {**meta, "replicated_from": src.name}, overwrite=True)
    gpu_copies = []
    for g in range(gpus):
        copy = gpu_rows.copy()
        copy["gpu"], copy["t_ns"] = g, copy["t_ns"] + g * 1_000
        copy["util_gpu"] = np.clip(copy["util_gpu"] * (1 - g / (2 * gpus)), 0, 100)
        gpu_copies.append(copy)
        writer.add_entity(Entity("device", str(g), int(copy["t_ns"][0]), {**device, "index": g}))
    proc_copies, host_copies = [], []
    for k in range(procs):
        offset = 1_000 * (k + 1)
        g_copy, h_copy = gpu_proc.copy(), host.copy()
        g_copy["pid"], g_copy["gpu"], g_copy["t_ns"] = (
            BASE_PID + k,
            k % gpus,
            g_copy["t_ns"] + offset,
        )
        g_copy["gpu_mem"] = g_copy["gpu_mem"] * (k + 1) // procs
        h_copy["pid"], h_copy["t_ns"] = BASE_PID + k, h_copy["t_ns"] + offset
        h_copy["cpu_pct"] = h_copy["cpu_pct"] * ((k % 7) + 1) / 7
        proc_copies.append(g_copy)
        host_copies.append(h_copy)
        value = {
            **proc,
            "pid": BASE_PID + k,
            "ppid": BASE_PID if k else proc.get("ppid"),
            "cmdline": [*(proc.get("cmdline") or ["python"]), "--rank", str(k)],
        }
        writer.add_entity(Entity("process", str(BASE_PID + k), int(h_copy["t_ns"][0]), value))
    for name, parts in (("gpu", gpu_copies), ("proc_gpu", proc_copies), ("proc_host", host_copies)):
        rows = np.concatenate(parts)
        writer.append(name, rows[np.argsort(rows["t_ns"], kind="stable")])
    writer.close()
    return out


async def frame_times(
    path: Path, frames: int, size: tuple[int, int], start_pid: int | None
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Milliseconds per redrawn frame: tick alone, tick + paint (wall), tick + paint (CPU);
    and wall milliseconds per idle frame."""
    app = GtopApp(ReplaySource(Recording(path)), refresh_s=3600.0, start_pid=start_pid)
    ticks, walls, cpus, idle = [], [], [], []
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        for _ in range(frames):
            start, cpu = time.perf_counter(), time.process_time()
            before = app.model.generation
            app.tick()
            ticked = time.perf_counter()
            await pilot.pause()
            took = time.perf_counter() - start
            if app.model.generation != before:
                ticks.append((ticked - start) * 1e3)
                walls.append(took * 1e3)
                cpus.append((time.process_time() - cpu) * 1e3)
            else:
                idle.append(took * 1e3)
            await asyncio.sleep(max(0.0, 1 / FPS - took))
    return ticks, walls, cpus, idle


def summary(ms: list[float], parts: int) -> str:
    """``median / p95 / max`` (the first ``parts`` of them)."""
    if not ms:
        return "–"
    stats = (statistics.median(ms), float(np.percentile(ms, 95)), max(ms))
    return " / ".join(f"{v:.1f}" for v in stats[:parts])


def cupti_frame_cost(
    rate: int = 100_000,
    seconds: int = 12,
    fps: int = FPS,
    pid: int = 7,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Per-frame cost of the process screen's CUPTI aggregation at ``rate`` kernel records/s.

    Synthetic kernel batches (one per frame) go through ``Model.apply`` with the tabs'
    :class:`~gtop.views.tabs.session_data.SessionData` listening (kernel totals and the
    attribution engine, incremental), then the Kernels tab's per-frame work
    (``KernelStats.rows``) and the GPU time tab's UI-thread snapshot. Attribution itself
    runs on a worker thread and is not part of a frame. Returns ms per frame by step, by
    ``clock`` (the wall clock; ``time.thread_time`` gives the UI thread's CPU time, what
    a test on a loaded machine can hold to a bound).
    """
    from gtop.core import layouts
    from gtop.core.hub import Update
    from gtop.core.model import Model
    from gtop.views.tabs.session_data import session_of

    model = Model()
    data = session_of(model)
    per_frame = rate // fps
    out: dict[str, list[float]] = {"apply": [], "kernel rows": [], "engine snapshot": []}
    for frame in range(seconds * fps):
        rows = layouts.KERNEL.empty(per_frame)
        t0 = frame * 1_000_000_000 // fps
        rows["t_ns"] = t0 + np.arange(per_frame, dtype=np.int64) * (1_000_000_000 // rate)
        rows["end_ns"] = rows["t_ns"] + 5_000
        rows["pid"], rows["device"], rows["stream"] = pid, 0, 7
        rows["name_id"] = np.arange(per_frame) % 40
        start = clock()
        model.apply(Update(batches={"kernel": rows}), int(rows["t_ns"][-1]))
        mid = clock()
        data.kernels[pid].rows({})
        end = clock()
        data.snapshot()
        out["apply"].append((mid - start) * 1e3)
        out["kernel rows"].append((end - mid) * 1e3)
        out["engine snapshot"].append((clock() - end) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--source", type=Path, default=REPO / "recordings" / "idle_busy_idle.gtop")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--procs", type=int, default=200)
    args = parser.parse_args()
    cases = [
        ("overview", (80, 24), None),
        ("overview", (200, 60), None),
        ("process screen", (80, 24), BASE_PID),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = replicate(args.source, Path(tmp) / "scaled.gtop", args.gpus, args.procs)
        print(
            f"# UI frame time, {args.gpus} GPUs × {args.procs} processes from "
            f"{args.source.name}, {FPS} fps, {args.frames} frames per case"
        )
        print(
            f"# {platform.node()} {platform.machine()} {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, Textual {version('textual')}, "
            f"load average {os.getloadavg()[0]:.1f} at start"
        )
        print()
        print(
            "| view | terminal | frames redrawn | tick ms (median / p95) | "
            "frame wall ms (median / p95 / max) | frame CPU ms (median / p95) | "
            "idle frame wall ms |"
        )
        print("|---|---|---|---|---|---|---|")
        for view, size, pid in cases:
            ticks, walls, cpus, idle = asyncio.run(frame_times(path, args.frames, size, pid))
            print(
                f"| {view} | {size[0]}×{size[1]} | {len(ticks)}/{args.frames} | "
                f"{summary(ticks, 2)} | {summary(walls, 3)} | {summary(cpus, 2)} | "
                f"{summary(idle, 1)} |"
            )
    print()
    print("| CUPTI aggregation at 100k kernel records/s, per frame | ms (median / p95) |")
    print("|---|---|")
    for step, ms in cupti_frame_cost().items():
        print(f"| {step} | {summary(ms, 2)} |")


if __name__ == "__main__":
    main()
