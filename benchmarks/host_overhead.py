"""Host-collector overhead: collector CPU and target slowdown, per tier and switch rate.

    PYTHONPATH=. python3 benchmarks/host_overhead.py [--budget 165] [--slice 1] [--json OUT]

(as root, for the perf and BPF tiers).

Target: workloads/switcher.py, one Python thread doing fixed CPU work (the "worker") plus
sleeper child processes making about 100 or 10,000 context switches a second.

Pinning. The worker gets a CPU of its own (its hyperthread sibling, if any, is left to
nobody); the sleepers and the target's main thread get other CPUs; this process, the
collector's threads and py-spy get the rest. That takes the scheduler's placement out of
the measurement. It also puts the sched_switch hooks' cost on the sleepers' CPUs, not
the worker's: that cost is the "in-kernel BPF" column, which a target whose own busy
threads do the switching would pay on top of "target speed". With fewer CPUs the plan
degrades (say, sleepers and collector share one) and the run says so.

Schedule. For each switch rate, rounds of blocks, one block per config, configs in
forward order in even rounds and reverse order in odd ones; a baseline slice (no
collector) sits between consecutive blocks. A block opens the collector, lets it settle
for 0.3 s (opening BPF costs time; this measures its steady state), measures two slices
of ``--slice`` seconds, closes it and settles 0.1 s. So the run is B C C B C' C' B ...;
each config slice pairs with its adjacent baseline (the first with the one before the
block, the second with the one after), so linear drift cancels over a block. The config
"none" is a block with no collector: its pair ratios are baseline against baseline, the
noise floor. Rounds continue while the ``--budget`` allows (at least one per rate).

Per slice: "target speed" is the worker's work units per wall second; "worker CPU" its
on-CPU time per wall second (the worker reads its own thread CPU clock at each unit), and
"work/CPU-s" work per second of that CPU time, so speed = CPU share x work/CPU-s separates
"the worker got less CPU" from "its CPU time did less" (interrupts on the worker's CPU,
such as cpu-clock sampling, count against the first where the kernel accounts IRQ time
apart, else against the second; the JSON adds its run-queue wait). Each is reported as the median
of pair ratios (config / adjacent baseline) with the interquartile range [p25-p75].
"collector CPU" is this process's CPU time less its main thread's (which only measures),
plus reaped children's (py-spy), as % of one core; "in-kernel BPF" the run time of the
collector's BPF programs (their fdinfo, with kernel.bpf_stats_enabled set for the run),
as % of one core, spent in whatever context the hooks interrupt, on any CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gtop.collectors.threads import proctree
from gtop.collectors.threads.tiers import open_thread_collector
from gtop.core.hub import Hub

TARGET = Path(__file__).parent / "workloads" / "switcher.py"
RATES = {"100/s": ["--sleepers", "1", "--interval", "0.01"],
         "10k/s": ["--sleepers", "2", "--interval", "0.00015"]}  # fmt: skip
CONFIGS = {
    "none": None,  # baseline against baseline: the noise floor
    "proc 100Hz": {"tier": "proc", "python_stacks": False},
    "perf": {"tier": "perf", "python_stacks": False},
    "bpf, no sampling": {"tier": "bpf", "sample_hz": 0, "python_stacks": False},
    "bpf 99Hz": {"tier": "bpf", "sample_hz": 99, "python_stacks": False},
    "bpf 99Hz + py-spy 100Hz": {"tier": "bpf", "sample_hz": 99, "python_stacks": True},
}
DEFAULT = "bpf 99Hz + py-spy 100Hz"  # gtop's default settings
OPEN_SETTLE, CLOSE_SETTLE = 0.3, 0.1
RATIOS = ("speed", "cpu_share", "work_per_cpu")  # per slice, compared with baselines
MEANS = ("sw_per_s", "collector_cpu_pct", "bpf_cpu_pct", "runq_ms_per_s")


@dataclass
class CpuPlan:
    worker: set[int] = field(default_factory=set)
    idle: set[int] = field(default_factory=set)  # the worker's hyperthread siblings
    sleepers: set[int] = field(default_factory=set)
    bench: set[int] = field(default_factory=set)  # this process, collector, py-spy
    notes: list[str] = field(default_factory=list)


def _cpu_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def plan_cpus() -> CpuPlan:
    """Split this process's allowed CPUs between worker, sleepers and benchmark."""
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return CpuPlan(notes=["no pinning: one CPU"])
    worker = max(allowed)  # CPU 0 takes most housekeeping interrupts
    sib = proctree.read_text(f"/sys/devices/system/cpu/cpu{worker}/topology/thread_siblings_list")
    idle = (_cpu_list(sib) & allowed) - {worker} if sib else set()
    rest = sorted(allowed - {worker} - idle)
    plan = CpuPlan(worker={worker}, idle=idle)
    if not rest:  # two hyperthreads of one core: use the sibling after all
        plan.notes.append(f"worker's sibling CPU {sorted(idle)} not left idle")
        rest, plan.idle = sorted(idle), set()
    if len(rest) == 1:
        plan.sleepers = plan.bench = set(rest)
        plan.notes.append(f"partial pinning: sleepers and collector share CPU {rest[0]}")
    else:
        n = 2 if len(rest) >= 4 else 1
        plan.sleepers, plan.bench = set(rest[-n:]), set(rest[:-n])
    return plan


def _pin(tid: int, cpus: set[int], notes: list[str]) -> None:
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError as exc:  # a thread that ended, or a restricted container
        notes.append(f"could not pin thread {tid}: {exc}")


class Target:
    """The switcher process tree, pinned per ``plan``; ``snapshot`` reads every counter."""

    def __init__(self, rate_args: list[str], plan: CpuPlan) -> None:
        self.proc = subprocess.Popen([sys.executable, str(TARGET), *rate_args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     start_new_session=True)  # fmt: skip
        ready, tid = self.proc.stdout.readline().split()
        if ready != b"READY":
            raise RuntimeError(f"switcher said {ready!r}")
        self.tid = int(tid)
        if plan.worker:
            for t in proctree.thread_table(self.proc.pid):
                _pin(t, plan.worker if t == self.tid else plan.sleepers, plan.notes)

    def close(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def snapshot(self) -> dict[str, float]:
        self.proc.stdin.write(b"\n")
        self.proc.stdin.flush()
        t_ns, cpu_ns, work = map(int, self.proc.stdout.readline().split())
        pid = self.proc.pid
        sched = proctree.read_text(f"/proc/{pid}/task/{self.tid}/schedstat") or "0 0"
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"t": t_ns / 1e9, "cpu": cpu_ns / 1e9, "work": work,
                "runq": int(sched.split()[1]) / 1e9, "switches": _switches(pid),
                "collector": me.ru_utime + me.ru_stime - time.thread_time()
                             + kids.ru_utime + kids.ru_stime,
                "bpf": _bpf_run_s(), "wall": time.monotonic()}  # fmt: skip


def _switches(pid: int) -> int:
    """Context switches so far of every thread of ``pid`` and its children."""
    total = 0
    for tid, owner in proctree.thread_table(pid).items():
        for line in (proctree.read_text(f"/proc/{owner}/task/{tid}/status") or "").splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[-1])
    return total


def _bpf_run_s() -> float:
    """Run time so far of the BPF programs this process holds (NaN when it holds none)."""
    total, found = 0, False
    for fd in os.listdir("/proc/self/fdinfo"):
        for line in (proctree.read_text(f"/proc/self/fdinfo/{fd}") or "").splitlines():
            if line.startswith("run_time_ns:"):
                total, found = total + int(line.split()[1]), True
    return total / 1e9 if found else float("nan")


def _slice(a: dict, b: dict) -> dict[str, float]:
    dt, wall, cpu = b["t"] - a["t"], b["wall"] - a["wall"], b["cpu"] - a["cpu"]
    return {"speed": (b["work"] - a["work"]) / dt, "cpu_share": cpu / dt,
            "work_per_cpu": (b["work"] - a["work"]) / cpu,
            "sw_per_s": (b["switches"] - a["switches"]) / wall,
            "runq_ms_per_s": 1e3 * (b["runq"] - a["runq"]) / wall,
            "collector_cpu_pct": 100 * (b["collector"] - a["collector"]) / wall,
            "bpf_cpu_pct": 100 * (b["bpf"] - a["bpf"]) / wall}  # fmt: skip


def measure_rate(target: Target, seconds: float, deadline: float) -> tuple[list[dict], int]:
    """Rounds of blocks until ``deadline``; returns the blocks and the number of rounds."""

    def baseline() -> dict:
        a = target.snapshot()
        time.sleep(seconds)
        return _slice(a, target.snapshot())

    time.sleep(0.5)  # the sleepers start
    before, blocks, rounds, longest = baseline(), [], 0, 0.0
    while rounds == 0 or time.monotonic() + longest < deadline:
        start = time.monotonic()
        order = list(CONFIGS.items())
        for name, config in order if rounds % 2 == 0 else order[::-1]:
            col = open_thread_collector(Hub(), target.proc.pid, **config) if config else None
            time.sleep(OPEN_SETTLE)
            a = target.snapshot()
            time.sleep(seconds)
            b = target.snapshot()
            time.sleep(seconds)
            c = target.snapshot()
            if col is not None:
                col.stop()
            time.sleep(CLOSE_SETTLE)
            after = baseline()
            blocks.append({"config": name, "round": rounds, "slices": [_slice(a, b), _slice(b, c)],
                           "baselines": [before, after]})  # fmt: skip
            before = after
        rounds, longest = rounds + 1, max(longest, time.monotonic() - start)
    return blocks, rounds


def summarize(rate: str, blocks: list[dict]) -> list[dict]:
    """Per config: median and quartiles of pair ratios, means of the absolute columns."""
    out = []
    for name in CONFIGS:
        mine = [b for b in blocks if b["config"] == name]
        pairs = [(s, base) for b in mine for s, base in zip(b["slices"], b["baselines"])]
        row: dict = {"rate": rate, "config": name, "pairs": len(pairs)}
        for key in RATIOS:
            ratios = sorted(s[key] / base[key] for s, base in pairs)
            q = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else 0
            lo, hi = (q[0], q[2]) if q else (ratios[0], ratios[0])
            row[key] = {"median": statistics.median(ratios), "p25": lo, "p75": hi,
                        "min": ratios[0], "max": ratios[-1], "ratios": ratios}  # fmt: skip
        for key in MEANS:
            row[key] = statistics.fmean(s[key] for s, _ in pairs)
        out.append(row)
    return out


def _fmt_ratio(r: dict) -> str:
    return f"{r['median']:.3f} [{r['p25']:.3f}-{r['p75']:.3f}]"


def report(rows: list[dict]) -> None:
    head = [("switches", 8), ("config", -22), ("sw/s", 6), ("target speed", 19), ("worker CPU", 19),
            ("work/CPU-s", 19), ("coll. CPU", 9), ("BPF", 6), ("n", 3)]  # fmt: skip
    print(" ".join(f"{h:<{-w}}" if w < 0 else f"{h:>{w}}" for h, w in head))  # fmt: skip
    for r in rows:
        bpf = "-" if r["bpf_cpu_pct"] != r["bpf_cpu_pct"] else f"{r['bpf_cpu_pct']:.2f}%"
        print(f"{r['rate']:>8} {r['config']:<22} {r['sw_per_s']:>6.0f} "
              f"{_fmt_ratio(r['speed']):>19} {_fmt_ratio(r['cpu_share']):>19} "
              f"{_fmt_ratio(r['work_per_cpu']):>19} {r['collector_cpu_pct']:>8.1f}% "
              f"{bpf:>6} {r['pairs']:>3}")  # fmt: skip
    for r in rows:
        s = r["speed"]
        if r["config"] == "none":
            print(f"noise floor at {r['rate']}: baseline/baseline pair ratios median "
                  f"{s['median']:.3f}, IQR {s['p25']:.3f}-{s['p75']:.3f}, "
                  f"min-max {s['min']:.3f}-{s['max']:.3f} (n={r['pairs']})")  # fmt: skip
        if r["config"] == DEFAULT:
            print(f"default settings at {r['rate']}: target slowdown {1 - s['median']:+.1%} "
                  f"(IQR {1 - s['p75']:+.1%} to {1 - s['p25']:+.1%})")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=165.0, help="seconds for the whole run")
    ap.add_argument("--slice", type=float, default=1.0, help="seconds per measured slice")
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
    start = time.monotonic()
    plan = plan_cpus()
    if plan.bench:  # every thread so far; the collector's threads and py-spy inherit it
        for tid in proctree.tids(os.getpid()):
            _pin(tid, plan.bench, plan.notes)
    print("CPUs:", {k: sorted(v) for k, v in asdict(plan).items() if k != "notes"}, *plan.notes)
    load = [os.getloadavg()]
    rows, rounds, raw = [], {}, {}
    for i, (rate, rate_args) in enumerate(RATES.items()):
        left = start + args.budget - 1 - time.monotonic()  # shared among the rates to go
        deadline = time.monotonic() + left / (len(RATES) - i)
        target = Target(rate_args, plan)
        try:
            raw[rate], rounds[rate] = measure_rate(target, args.slice, deadline)
        finally:
            target.close()
        rows += summarize(rate, raw[rate])
    load.append(os.getloadavg())
    report(rows)
    print(f"rounds per rate {rounds}; {time.monotonic() - start:.0f} s; load {load}")
    if args.json:
        meta = {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                "command": sys.argv, "cpu_plan": {k: sorted(v) if isinstance(v, set) else v
                                                  for k, v in asdict(plan).items()},
                "slice_s": args.slice, "rounds": rounds, "loadavg": load}  # fmt: skip
        out = json.dumps({"meta": meta, "results": rows, "blocks": raw}, indent=1)
        Path(args.json).write_text(out.replace("NaN", "null"))  # BPF time of non-BPF tiers


if __name__ == "__main__":
    main()
