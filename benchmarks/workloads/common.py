"""What every benchmark workload shares: its command line, readiness line, and the
measured loop that prints one JSON result line.

Protocol (stdout, one line each): ``ready`` once warmed up; then, with ``--wait-go``,
the workload waits for ``go`` on stdin; ``rate {"t_ns":..., "steps_per_s":...}`` every
``--report-every`` seconds; finally ``result {...}`` with ``steps``, ``seconds``,
``steps_per_s``, ``kernels`` (launched in the measured region, when the workload knows),
and ``t0_ns``/``t1_ns`` (CLOCK_MONOTONIC, GPU synchronised at both ends).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
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
        torch.cuda.synchronize()
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
        },
    )
