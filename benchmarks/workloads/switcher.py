"""Overhead target: one thread does fixed CPU work; child processes make context switches.

    python benchmarks/workloads/switcher.py --sleepers 2 --interval 0.0002

Each sleeper is a child process looping on ``time.sleep(interval)`` (a process, so the
worker's GIL does not throttle it), so the target's tree switches about
``sleepers / interval`` times a second (less when timer slack or load cuts in). Prints
``READY <worker's native thread id>`` (so a benchmark can pin it), then answers each line
read on stdin with ``<monotonic_ns> <worker CPU ns> <work units done>``: the worker takes
all three together at the end of each work unit (about a millisecond), so rates over any
two answers are exact to whole units. Run it in its own session and kill the group.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time

state = (0, 0, 0)  # (monotonic_ns, worker's thread CPU ns, work units): one atomic swap
started = threading.Event()
worker_tid = 0


def worker() -> None:
    global state, worker_tid
    worker_tid = threading.get_native_id()
    state = (time.monotonic_ns(), time.thread_time_ns(), 0)
    started.set()
    work = 0
    while True:
        x = 0
        for i in range(10_000):
            x += i * i
        work += 1
        state = (time.monotonic_ns(), time.thread_time_ns(), work)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleepers", type=int, default=1)
    ap.add_argument("--interval", type=float, default=0.01)
    args = ap.parse_args()
    threading.Thread(target=worker, daemon=True).start()
    started.wait()
    loop = f"import time\nwhile True: time.sleep({args.interval})"
    for _ in range(args.sleepers):
        subprocess.Popen([sys.executable, "-c", loop])
    print("READY", worker_tid, flush=True)
    for _line in sys.stdin:
        print(*state, flush=True)


if __name__ == "__main__":
    main()
