"""A Python loop whose phases wait or work at known lines: which line each moment was at.

The main thread loops over phases of ``--phase-ms`` each, each one call at a line marked
``# phase: NAME``: ``sleep`` (time.sleep), ``read`` (os.read on a pipe another thread
writes to), ``python`` (pure-Python arithmetic), ``lock`` (acquiring a lock another thread
holds), and with ``--cuda`` ``item`` (``.item()`` of a tensor a ``torch.cuda._sleep``
kernel computes: the host blocks in the CUDA runtime). ``--log FILE`` gets one line per
phase, ``NAME START_NS END_NS`` on CLOCK_MONOTONIC, written as it ends. Prints ``READY
{json}`` (pid, main tid, the line of each phase) once its threads run; runs until killed,
or for ``--seconds``.

    gtop record -o lines.gtop -- python3 benchmarks/workloads/py_lines.py --seconds 8 --cuda
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
from pathlib import Path


def phase_lines() -> dict[str, int]:
    """``{phase: line}`` of this file's ``# phase: NAME`` markers."""
    lines = Path(__file__).read_text().splitlines()
    marks = (re.search(r"# phase: (\w+)$", text) for text in lines)
    return {m.group(1): i for i, m in enumerate(marks, 1) if m}


def python_work(seconds: float) -> int:
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += sum(i * i for i in range(200))
    return n


def feeder(w: int, go: threading.Event, seconds: float) -> None:
    """Writes one byte ``seconds`` after each ``go``."""
    while True:
        go.wait()
        go.clear()
        time.sleep(seconds)
        os.write(w, b"x")


def holder(lock: threading.Lock, go: threading.Event, held: threading.Event, s: float) -> None:
    """Holds ``lock`` for ``s`` seconds after each ``go``, saying so by ``held``."""
    while True:
        go.wait()
        go.clear()
        with lock:
            held.set()
            time.sleep(s)


def cuda_item(seconds: float):
    """A function that blocks ``seconds`` in ``.item()`` (None without a CUDA GPU)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.ones(1, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1_000_000)
    stop.record()
    torch.cuda.synchronize()
    cycles = int(1_000_000 * seconds * 1000 / start.elapsed_time(stop))

    def item() -> float:
        torch.cuda._sleep(cycles)
        return (x * 2).item()  # phase: item

    return item


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phase-ms", type=float, default=100.0)
    ap.add_argument("--seconds", type=float, default=0.0, help="0: until killed")
    ap.add_argument("--log", default="", help="one line per phase: NAME START_NS END_NS")
    ap.add_argument("--cuda", action="store_true", help="add the .item() phase")
    args = ap.parse_args()
    s = args.phase_ms / 1000
    r, w = os.pipe()
    read_go, lock_go, held = threading.Event(), threading.Event(), threading.Event()
    lock = threading.Lock()
    threading.Thread(target=feeder, args=(w, read_go, s), daemon=True).start()
    threading.Thread(target=holder, args=(lock, lock_go, held, s), daemon=True).start()
    item = cuda_item(s) if args.cuda else None
    log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115
    lines = phase_lines()
    if item is None:
        lines.pop("item")
    info = {"pid": os.getpid(), "tid": threading.get_native_id(), "lines": lines}
    print("READY " + json.dumps(info), flush=True)
    end = time.monotonic() + args.seconds if args.seconds else float("inf")
    while time.monotonic() < end:
        for name in lines:
            if name == "read":
                read_go.set()
            elif name == "lock":
                lock_go.set()
                held.wait()
                held.clear()
            t0 = time.monotonic_ns()
            if name == "sleep":
                time.sleep(s)  # phase: sleep
            elif name == "read":
                os.read(r, 1)  # phase: read
            elif name == "python":
                python_work(s)  # phase: python
            elif name == "lock":
                lock.acquire()  # phase: lock
                lock.release()
            elif item is not None:
                item()
            if log is not None:
                log.write(f"{name} {t0} {time.monotonic_ns()}\n")


if __name__ == "__main__":
    main()
