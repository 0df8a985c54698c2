"""Host-collector overhead: collector CPU and target slowdown, per tier and switch rate.

    python benchmarks/host_overhead.py [--seconds 3] [--json OUT.json]

For each context-switch rate (about 100/s and 10,000/s, from workloads/switcher.py) runs
the target alone and under each tier, interleaved with baseline runs so that drift on a
shared machine shows; prints a table of ratios within this one run. "target speed" is
the target's CPU-work throughput relative to the mean of its baseline runs; "collector
CPU" is this process's CPU time plus its children's (py-spy), as % of one core;
"in-kernel BPF" is the run time of all BPF programs (kernel.bpf_stats_enabled, read with
bpftool), as % of one core: it is spent in the context of whatever the hooks interrupt.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from gtop.collectors import proctree
from gtop.collectors.threads import open_thread_collector
from gtop.pipeline.hub import Hub

TARGET = Path(__file__).parent / "workloads" / "switcher.py"
RATES = {"100/s": ["--sleepers", "1", "--interval", "0.01"],
         "10k/s": ["--sleepers", "2", "--interval", "0.00015"]}  # fmt: skip
CONFIGS = {
    "baseline": None,
    "proc 100Hz": {"tier": "proc", "python_stacks": False},
    "perf": {"tier": "perf", "python_stacks": False},
    "bpf, no sampling": {"tier": "bpf", "sample_hz": 0, "python_stacks": False},
    "bpf 99Hz": {"tier": "bpf", "sample_hz": 99, "python_stacks": False},
    "bpf 99Hz + py-spy 4Hz": {"tier": "bpf", "sample_hz": 99, "python_stacks": True},
}


def _switches(pid: int) -> int:
    """Context switches so far of every thread of ``pid`` and its children."""
    total = 0
    for tid, owner in proctree.thread_table(pid).items():
        with open(f"/proc/{owner}/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[-1])
    return total


def _cpu_s() -> float:
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _bpf_run_ns() -> int | None:
    """Total run time of loaded BPF programs (needs bpftool and kernel.bpf_stats_enabled)."""
    try:
        out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return sum(p.get("run_time_ns", 0) for p in json.loads(out.stdout))


def measure(proc: subprocess.Popen, config: dict | None, seconds: float) -> dict:
    def probe() -> tuple[int, int]:
        proc.stdin.write(b"\n")
        proc.stdin.flush()
        t, work = proc.stdout.readline().split()
        return int(t), int(work)

    col = open_thread_collector(Hub(), proc.pid, **config) if config else None
    time.sleep(0.3)
    cpu0, sw0, (t0, w0), bpf0 = _cpu_s(), _switches(proc.pid), probe(), _bpf_run_ns()
    time.sleep(seconds)
    cpu1, sw1, (t1, w1), bpf1 = _cpu_s(), _switches(proc.pid), probe(), _bpf_run_ns()
    if col is not None:
        col.stop()
    wall = (t1 - t0) / 1e9
    bpf = (bpf1 - bpf0) / 1e9 / wall if bpf0 is not None and bpf1 is not None else float("nan")
    return {"work_per_s": (w1 - w0) / wall, "switches_per_s": (sw1 - sw0) / wall,
            "collector_cpu_pct": 100 * (cpu1 - cpu0) / wall,
            "bpf_cpu_pct": 100 * bpf}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    stats = Path("/proc/sys/kernel/bpf_stats_enabled")
    stats_before = stats.read_text() if stats.exists() else None
    if stats_before is not None:
        stats.write_text("1")  # BPF programs' own run time, measured by the kernel
    try:
        run(args)
    finally:
        if stats_before is not None:
            stats.write_text(stats_before)


def run(args: argparse.Namespace) -> None:
    results: list[dict] = []
    spreads: dict[str, float] = {}
    for rate, rate_args in RATES.items():
        proc = subprocess.Popen([sys.executable, str(TARGET), *rate_args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, start_new_session=True)  # fmt: skip
        try:
            assert proc.stdout.readline().strip() == b"READY"
            runs = []
            for name, config in CONFIGS.items():
                if config is not None:  # a baseline before each tier, to see drift
                    runs.append(("baseline", measure(proc, None, args.seconds)))
                runs.append((name, measure(proc, config, args.seconds)))
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        base = [r["work_per_s"] for n, r in runs if n == "baseline"]
        mean = sum(base) / len(base)
        spreads[rate] = (max(base) - min(base)) / mean
        for name, r in runs:
            if name != "baseline":
                results.append({"rate": rate, "config": name, **r,
                                "target_speed": r["work_per_s"] / mean})  # fmt: skip
    print(f"{'switches':>9} {'config':<24} {'sw/s':>8} {'target speed':>12} "
          f"{'collector CPU':>13} {'in-kernel BPF':>13}")  # fmt: skip
    for r in results:
        print(f"{r['rate']:>9} {r['config']:<24} {r['switches_per_s']:>8.0f} "
              f"{r['target_speed']:>12.3f} {r['collector_cpu_pct']:>12.1f}% "
              f"{r['bpf_cpu_pct']:>12.2f}%")  # fmt: skip
    for rate, spread in spreads.items():
        print(f"baseline runs at {rate} differed by {spread:.1%} (the noise floor)")
    if args.json:
        meta = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                "command": sys.argv}  # fmt: skip
        out = {"meta": meta, "results": results, "baseline_spread": spreads}
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
