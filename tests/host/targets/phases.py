"""Test target: threads that alternate 50 ms busy, 50 ms time.sleep, 50 ms pipe read.

Prints one line ``READY {json}`` (pid, worker tids, the stuck thread's tid) once every
thread runs, then keeps going until killed. Options add robustness scenarios: short-lived
threads (``--churn``), child processes (``--children N``), ``exec`` of itself
(``--exec-after S``) and exit (``--exit-after S``).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import threading
import time

PHASE_S = 0.05
_libc = ctypes.CDLL(None)


def set_name(name: str) -> None:
    """Name the OS thread (Python 3.11 does not), so /proc shows it."""
    _libc.prctl(15, name.encode()[:15], 0, 0, 0)


def busy_phase() -> None:
    end = time.monotonic() + PHASE_S
    x = 0
    while time.monotonic() < end:
        x += 1


def sleep_phase() -> None:
    time.sleep(PHASE_S)


def pipe_phase(r: int, go: threading.Event) -> None:
    go.set()
    os.read(r, 1)


def feeder(w: int, go: threading.Event) -> None:
    set_name("feeder")
    while True:
        go.wait()
        go.clear()
        time.sleep(PHASE_S)
        os.write(w, b"x")


def worker(i: int, ready: threading.Barrier, tids: list[int]) -> None:
    set_name(f"phases-{i}")
    tids[i] = threading.get_native_id()
    r, w = os.pipe()
    go = threading.Event()
    threading.Thread(target=feeder, args=(w, go), daemon=True).start()
    ready.wait()
    while True:
        busy_phase()
        sleep_phase()
        pipe_phase(r, go)


def stuck_forever(ready: threading.Barrier, out: list[int]) -> None:
    set_name("stuck")
    out.append(threading.get_native_id())
    r, _w = os.pipe()
    ready.wait()
    os.read(r, 1)


def churn() -> None:
    """Start a short-lived thread every 20 ms."""
    set_name("churn")
    while True:
        t = threading.Thread(target=busy_phase, daemon=True)
        t.start()
        t.join()
        time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--churn", action="store_true")
    ap.add_argument("--children", type=int, default=0)
    ap.add_argument("--exec-after", type=float, default=0)
    ap.add_argument("--exit-after", type=float, default=0)
    args = ap.parse_args()
    tids = [0] * args.workers
    stuck: list[int] = []
    ready = threading.Barrier(args.workers + 2)
    for i in range(args.workers):
        threading.Thread(target=worker, args=(i, ready, tids), daemon=True).start()
    threading.Thread(target=stuck_forever, args=(ready, stuck), daemon=True).start()
    if args.churn:
        threading.Thread(target=churn, daemon=True).start()
    children = []
    for _ in range(args.children):
        child = [sys.executable, __file__, "--workers", "1"]
        children.append(subprocess.Popen(child, stdout=subprocess.DEVNULL))
    ready.wait()
    info = {
        "pid": os.getpid(),
        "workers": tids,
        "stuck": stuck[0],
        "children": [c.pid for c in children],
    }
    print("READY " + json.dumps(info), flush=True)
    if args.exec_after:
        time.sleep(args.exec_after)
        os.execv(sys.executable, [sys.executable, __file__, "--workers", str(args.workers)])
    if args.exit_after:
        time.sleep(args.exit_after)
        os._exit(0)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
