"""What gtop's Python sampler costs the process it samples, as a ratio in one run.

A pure-Python loop reports its iterations every 0.2 s, with its own CPU time; the sampler
(``gtop.collectors.threads.pystacks.sampler``: Austin where installed) is started and
stopped in alternating ``--window`` second windows, off-on then on-off (ABBA), so on and
off share the machine's load and a drift of the loop's rate over the run cancels (with
off always first, a control run read a 10% "cost" on the quiet H200 host). Cost = 1 -
(median rate on / median rate off), per second of the loop's own CPU time (the target's
slowdown: what reading its memory takes from it) and per wall second (also any CPU the
sampler takes from it on a machine with a free core or none). Also: the sampler's own CPU
(its children's), as % of one core, and its samples per second.

    PYTHONPATH=. python3 benchmarks/python_sampler_cost.py --rounds 10 --rate 100
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import threading
import time

import psutil

from gtop.collectors.threads import pystacks

LOOP = """\
import sys, time
def work():
    return sum(i * i for i in range(100))
n, t_next = 0, time.monotonic() + 0.2
while True:
    work()
    n += 1
    if time.monotonic() >= t_next:
        print(time.monotonic_ns(), n, time.thread_time_ns(), flush=True)
        t_next += 0.2
"""


class _Tree:
    def __init__(self, pid: int) -> None:
        self.threads = {pid: pid}


def _reports(proc: subprocess.Popen, out: list[tuple[int, int, int]]) -> None:
    for line in proc.stdout:
        t, n, cpu = map(int, line.split())
        out.append((t, n, cpu))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=pystacks.DEFAULT_RATE_HZ)
    ap.add_argument(
        "--control", action="store_true", help="no sampler in the 'on' windows: the noise floor"
    )
    args = ap.parse_args()
    target = subprocess.Popen([sys.executable, "-c", LOOP], stdout=subprocess.PIPE, text=True)
    reports: list[tuple[int, int, int]] = []
    threading.Thread(target=_reports, args=(target, reports), daemon=True).start()
    time.sleep(1.0)
    windows: list[tuple[bool, int, int]] = []
    me = psutil.Process()
    sampler_cpu = samples = on_s = 0.0
    name = ""
    try:
        for r in range(args.rounds):
            for on in (False, True) if r % 2 == 0 else (True, False):  # ABBA: drift cancels
                live = on and not args.control
                sampler = pystacks.sampler(target.pid, args.rate) if live else None
                t0 = time.monotonic_ns()
                if sampler is not None:
                    name = sampler.name
                    sampler.start(_Tree(target.pid))
                time.sleep(args.window)
                if sampler is not None:
                    kids = [p for p in me.children() if p.pid != target.pid]
                    sampler_cpu += sum(sum(p.cpu_times()[:2]) for p in kids)
                    sampler.stop()
                    samples += sampler.samples
                    on_s += args.window
                windows.append((on, t0, time.monotonic_ns()))
    finally:
        target.kill()
    rates: dict[bool, dict[str, list[float]]] = {k: {"cpu": [], "wall": []} for k in (False, True)}
    for (t_a, n_a, c_a), (t_b, n_b, c_b) in itertools.pairwise(reports):
        inside = [on for on, w0, w1 in windows if w0 + 0.3e9 <= t_a and t_b <= w1]  # settled
        if inside and c_b > c_a:
            rates[inside[0]]["cpu"].append((n_b - n_a) / (c_b - c_a) * 1e9)
            rates[inside[0]]["wall"].append((n_b - n_a) / (t_b - t_a) * 1e9)
    name = name or "none (control)"
    print(f"sampler: {name} at {args.rate:g} Hz; {args.rounds} rounds of {args.window} s off/on")
    print(f"{'per':<6}{'off it/s':>12}{'on it/s':>12}{'cost':>9}{'n off/on':>10}")
    for per in ("cpu", "wall"):
        off, on = statistics.median(rates[False][per]), statistics.median(rates[True][per])
        n = f"{len(rates[False][per])}/{len(rates[True][per])}"
        print(f"{per:<6}{off:>12.0f}{on:>12.0f}{1 - on / off:>9.2%}{n:>10}")
    if on_s:
        own = f"{sampler_cpu / on_s:.1%} of one core"
        print(f"sampler's own CPU: {own}; {samples / on_s:.0f} samples/s")


if __name__ == "__main__":
    main()
