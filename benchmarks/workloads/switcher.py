"""Overhead target: one thread does fixed CPU work; child processes make context switches.

    python benchmarks/workloads/switcher.py --sleepers 2 --interval 0.0002

Each sleeper is a child process looping on ``time.sleep(interval)`` (a process, so the
worker's GIL does not throttle it), so the target's tree switches about
``sleepers / interval`` times a second (less when timer slack or load cuts in). Each line
read on stdin is answered with ``<monotonic_ns> <work units done>``. Run it in its own
session and kill the group.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time

work = 0


def worker() -> None:
    global work
    while True:
        x = 0
        for i in range(10_000):
            x += i * i
        work += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleepers", type=int, default=1)
    ap.add_argument("--interval", type=float, default=0.01)
    args = ap.parse_args()
    threading.Thread(target=worker, daemon=True).start()
    loop = f"import time\nwhile True: time.sleep({args.interval})"
    for _ in range(args.sleepers):
        subprocess.Popen([sys.executable, "-c", loop])
    print("READY", flush=True)
    for _line in sys.stdin:
        print(time.monotonic_ns(), work, flush=True)


if __name__ == "__main__":
    main()
