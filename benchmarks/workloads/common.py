"""What every benchmark workload shares: its command line, readiness line, and the
measured loop that prints one JSON result line.

Protocol (stdout, one line each): ``ready`` once warmed up; then, with ``--wait-go``,
the workload waits for ``go`` on stdin; ``rate {"t_ns":..., "steps_per_s":...}`` every
``--report-every`` seconds; finally ``result {...}`` with ``steps``, ``seconds``,
``steps_per_s``, ``kernels`` (launched in the measured region, when the workload knows),
``t0_ns``/``t1_ns`` (CLOCK_MONOTONIC, GPU synchronised at both ends), ``pinning`` (where
:func:`pin_threads` put the threads) and ``threads`` (the launching thread's CPU share and
context switches in the measured region, and the other threads' CPU share).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--seconds", type=float, default=5.0, help="measured duration")
    p.add_argument("--steps", type=int, default=0, help="run exactly this many steps instead")
    p.add_argument("--warmup", type=int, default=5, help="steps before 'ready'")
    p.add_argument(
        "--warmup-seconds",
        type=float,
        default=0.0,
        help="and keep warming up at least this long (CPU and GPU clocks settle)",
    )
    p.add_argument("--report-every", type=float, default=0.0, help="print rate lines")
    p.add_argument("--wait-go", action="store_true", help="wait for 'go' on stdin")
    p.add_argument(
        "--torch-profiler", action="store_true", help="run under torch.profiler (CUDA only)"
    )
    p.add_argument("--profile-out", help="with --torch-profiler: write its kernels (JSON)")
    return p


def dump_profile(prof: object, path: str) -> None:
    """torch.profiler's kernels: {name: {"count", "total_us", "durations_us"}}, each
    kernel's durations in launch order (copies and memsets left out)."""
    from torch.autograd import DeviceType

    events: dict[str, list[tuple[float, float]]] = {}
    for e in prof.events():  # type: ignore[attr-defined]
        if e.device_type != DeviceType.CUDA or e.name.startswith(("Memcpy", "Memset")):
            continue
        events.setdefault(e.name, []).append((e.time_range.start, e.time_range.elapsed_us()))
    kernels = {
        name: {
            "count": len(ev),
            "total_us": float(sum(d for _, d in ev)),
            "durations_us": [d for _, d in sorted(ev)],
        }
        for name, ev in events.items()
    }
    with open(path, "w") as f:
        json.dump(kernels, f)


PIN_ENV = "GTOP_BENCH_PIN"


def pin_threads() -> dict | None:
    """Put this (the launching) thread alone on the core the benchmark chose and every
    other thread of the process (the agent's or the profiler's, CUDA's) on the others,
    as ``GTOP_BENCH_PIN`` (``main=C;rest=C,C``) says; called once measuring starts, when
    every mode has started its threads. Returns what was done, or None."""
    spec = dict(part.split("=", 1) for part in os.environ.get(PIN_ENV, "").split(";") if part)
    if "main" not in spec:
        return None
    main = {int(spec["main"])}
    rest = {int(c) for c in spec.get("rest", "").split(",") if c} or main
    me = threading.get_native_id()
    moved = 0
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError, ValueError):
            os.sched_setaffinity(int(tid), main if int(tid) == me else rest)
            moved += int(tid) != me
    return {"main": sorted(main), "rest": sorted(rest), "other_threads": moved}


class ThreadClock:
    """CPU time and involuntary context switches of the calling thread, and the CPU
    time of the whole process, between start() and stop(): where a launch-bound loop's
    time went (descheduled, or shared with the process's other threads)."""

    def start(self) -> None:
        self._t = resource.getrusage(resource.RUSAGE_THREAD)
        self._p = resource.getrusage(resource.RUSAGE_SELF)
        self._wall = time.monotonic()

    def stop(self) -> dict:
        t = resource.getrusage(resource.RUSAGE_THREAD)
        p = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.monotonic() - self._wall
        main_cpu = t.ru_utime + t.ru_stime - self._t.ru_utime - self._t.ru_stime
        all_cpu = p.ru_utime + p.ru_stime - self._p.ru_utime - self._p.ru_stime
        return {
            "main_cpu_share": main_cpu / wall,
            "other_threads_cpu_share": (all_cpu - main_cpu) / wall,
            "main_involuntary_switches": t.ru_nivcsw - self._t.ru_nivcsw,
            "main_voluntary_switches": t.ru_nvcsw - self._t.ru_nvcsw,
        }


def say(tag: str, payload: dict | None = None) -> None:
    print(tag if payload is None else f"{tag} {json.dumps(payload)}", flush=True)


def run(args: argparse.Namespace, step: Callable[[], None], kernels_per_step: int = 0) -> None:
    """Warm up, announce readiness, run the measured loop, print the result."""
    import torch

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    warm_until = time.monotonic() + args.warmup_seconds
    while time.monotonic() < warm_until:
        step()
        torch.cuda.synchronize()
    say("ready")
    if args.wait_go:
        sys.stdin.readline()
    profiler = contextlib.nullcontext()
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile

        profiler = profile(activities=[ProfilerActivity.CUDA])
    with profiler:
        pinning = pin_threads()
        torch.cuda.synchronize()
        clock = ThreadClock()
        clock.start()
        t0 = last = time.monotonic_ns()
        steps = last_steps = 0
        while True:
            step()
            steps += 1
            now = time.monotonic_ns()
            if args.report_every and now - last >= args.report_every * 1e9:
                torch.cuda.synchronize()
                now = time.monotonic_ns()
                say("rate", {"t_ns": now, "steps_per_s": (steps - last_steps) * 1e9 / (now - last)})
                last, last_steps = now, steps
            if (args.steps and steps >= args.steps) or (
                not args.steps and now - t0 >= args.seconds * 1e9
            ):
                break
        torch.cuda.synchronize()
        t1 = time.monotonic_ns()
        threads = clock.stop()
    if args.torch_profiler and args.profile_out:
        dump_profile(profiler, args.profile_out)
    say(
        "result",
        {
            "steps": steps,
            "seconds": (t1 - t0) / 1e9,
            "steps_per_s": steps * 1e9 / (t1 - t0),
            "kernels": steps * kernels_per_step,
            "t0_ns": t0,
            "t1_ns": t1,
            "pinning": pinning,
            "threads": threads,
        },
    )
