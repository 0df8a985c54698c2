"""What Python frames cost and give: gtop's streaming sampler vs. the `py-spy dump` loop
it replaced, on one real target (a main thread in Python code plus three sleeping threads).

For each mode, over the same wall time: py-spy's CPU (its processes' user+sys time, % of
one core) and the main thread's Python-stack samples per second (dump: the dumps that
read it; streaming: the time its runs span × the 100 Hz rate, since py-spy writes an
event only where the stack changed). Chunk attach gaps and the chunk cut at the end show
as the streaming rate falling short of 100.

    python3 benchmarks/pyspy_sampler_cost.py [--seconds 10] [-- CMD ...]

With ``-- CMD``, the target is that Python command instead (e.g. a torch training loop
on the GPU machine, where py-spy reads a far larger process): its first line on stdout
is the readiness signal, and its main thread (tid = pid) is the one counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time

from gtop.collectors.threads import pystacks

TARGET = """
import threading, time
def idle():
    while True:
        time.sleep(0.01)
for _ in range(3):
    threading.Thread(target=idle, daemon=True).start()
print(threading.get_native_id(), flush=True)
while True:
    sum(range(10000))
"""


class Tree:
    def __init__(self, pid: int) -> None:
        self.threads = {pid: pid}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def streaming(pid: int, tid: int, seconds: float) -> tuple[float, float]:
    """(py-spy CPU seconds, main-thread samples)."""
    sampler = pystacks.PyStackSampler(pid)
    cpu0 = children_cpu_s()
    sampler.start(Tree(pid))
    time.sleep(seconds)
    sampler.stop()  # kills the chunk still running: its CPU is counted, its runs are not
    cpu = children_cpu_s() - cpu0
    covered_s = sum(t1 - t0 for t0, t1, _ in sampler._runs.get(tid, [])) / 1e9
    return cpu, covered_s * sampler.rate_hz


def dump_loop(pid: int, tid: int, seconds: float, rate_hz: float) -> tuple[float, float]:
    """The sampler before: one `py-spy dump --json --nonblocking` per read, `rate_hz`."""
    exe = pystacks.available()
    assert exe is not None
    cmd = [exe, "dump", "--json", "--nonblocking", "--pid", str(pid)]
    cpu0, reads = children_cpu_s(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and any(t["os_thread_id"] == tid for t in json.loads(out.stdout)):
            reads += 1
        time.sleep(1 / rate_hz)
    return children_cpu_s() - cpu0, reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    argv = sys.argv[1:]
    cmd = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if cmd else argv)
    target = subprocess.Popen(
        cmd or [sys.executable, "-c", TARGET], stdout=subprocess.PIPE, text=True
    )
    try:
        assert target.stdout is not None
        first = target.stdout.readline()  # the readiness line
        tid = target.pid if cmd else int(first)
        # the rest of its output goes unread: keep the pipe from filling
        drain = threading.Thread(target=target.stdout.read, daemon=True)
        drain.start()
        rows = [
            ("py-spy dump loop, 4 Hz (before)", *dump_loop(target.pid, tid, args.seconds, 4.0)),
            ("py-spy record stream, 100 Hz (now)", *streaming(target.pid, tid, args.seconds)),
        ]
    finally:
        target.kill()
        target.wait()
    what = " ".join(cmd) if cmd else "built-in target"
    print(f"{os.cpu_count()} CPUs, {args.seconds:g} s per mode, {what} (pid {target.pid})")
    print("| mode | py-spy CPU, % of one core | main-thread Python stacks per s |")
    print("|---|---|---|")
    for name, cpu, samples in rows:
        print(f"| {name} | {100 * cpu / args.seconds:.1f}% | {samples / args.seconds:.1f} |")


if __name__ == "__main__":
    main()
