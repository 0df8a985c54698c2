"""How closely each host-thread tier's on-CPU time agrees with the kernel's schedstat.

Usage (root, no GPU): python3 benchmarks/host_schedstat_agreement.py [--windows N]
    [--tiers bpf,bpf:raw,bpf:tp,perf,proc]

Per tier, ``--windows`` times: start the test target ``tests/host/targets/phases.py``
(two workers alternating 50 ms busy, sleep and pipe read), open the collector, and over a
3-second window compare each worker's published on-CPU time with the difference of its
``/proc/PID/task/TID/schedstat`` run time (the same harness as
``tests/host/test_host_threads.py``). Prints, per tier, the largest and the median
absolute difference in points of the window, how many thread-windows exceed 1 point, and
for the BPF tiers the context switches the hooks never saw (inferred, and counted).
To compare with an older commit, run this script from a worktree of it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "host")]

from host_harness import collect, phases  # noqa: E402

from gtop.collectors.threads.tiers import open_thread_collector  # noqa: E402
from gtop.core.layouts import ThreadState  # noqa: E402


def one_window(tier_spec: str) -> tuple[list[float], int]:
    """|on-CPU - schedstat| per worker (fractions of the window); switches not seen."""
    tier, _, mode = tier_spec.partition(":")
    kw = {"mode": mode} if mode else {}
    with phases("--workers", "2") as (_proc, info):
        run = collect(
            lambda hub, pid: open_thread_collector(hub, pid, tier=tier, py_rate_hz=10.0, **kw),
            info["pid"],
            [*info["workers"], info["stuck"]],
        )
    window = run.t1 - run.t0
    diffs = [
        abs(run.overlap(tid, ThreadState.ON_CPU) - run.truth_on[tid]) / window
        for tid in info["workers"]
    ]
    detail = run.collector.status.detail
    return diffs, int(detail.get("missed_switch_ins", 0)) + int(detail.get("missed_switch_outs", 0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--tiers", default="bpf,bpf:raw,bpf:tp,perf,proc")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("host_schedstat_agreement: needs root (BPF and perf tiers)", file=sys.stderr)
        return 1
    tiers = args.tiers.split(",")
    if "bpf:tp" in tiers and not os.path.exists("/sys/kernel/tracing/events/sched"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    print("| tier | thread-windows | max diff, points | median | over 1 point | unseen switches |")
    print("|---|---:|---:|---:|---:|---:|")
    for tier in tiers:
        diffs: list[float] = []
        missed = 0
        for i in range(args.windows):
            got, seen = one_window(tier)
            diffs += got
            missed += seen
            print(f"  {tier} window {i + 1}/{args.windows}", file=sys.stderr, flush=True)
        over = sum(d > 0.01 for d in diffs)
        missed_cell = str(missed) if tier.startswith("bpf") else "n/a"
        print(
            f"| {tier} | {len(diffs)} | {100 * max(diffs):.2f} | "
            f"{100 * statistics.median(diffs):.2f} | {over} | {missed_cell} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
