"""Capture host-thread records of a process (and its children) to an ``.npz`` file.

    python benchmarks/host_capture.py OUT.npz --pid PID [--seconds 10] [--tier auto]
    python benchmarks/host_capture.py OUT.npz --phases   # the test target (view fixtures)

The file holds THREAD_STATE and CPU_SAMPLE records, plus a JSON ``meta`` array with the
stack table, thread names (and pids), the tier and collector status. Until the recording
writer lands this is the host side's capture format.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from gtop.collectors.threads.tiers import open_thread_collector
from gtop.core.hub import Hub
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE


def capture(pid: int, seconds: float, tier: str = "auto", **kw) -> dict:
    """Run the host collector on ``pid`` for ``seconds``; return records and metadata."""
    hub = Hub()
    sub = hub.subscribe()
    col = open_thread_collector(hub, pid, tier=tier, **kw)
    t0 = time.monotonic_ns()
    try:
        time.sleep(seconds)
    finally:
        col.stop()
    upd = sub.poll()
    threads = {e.key: e.value for e in upd.entities if e.kind == "thread"}
    return {
        "intervals": upd.batches.get(THREAD_STATE.name, THREAD_STATE.empty()),
        "samples": upd.batches.get(CPU_SAMPLE.name, CPU_SAMPLE.empty()),
        "meta": {
            "t0": t0,
            "t1": time.monotonic_ns(),
            "tier": col.tier,
            "status": dataclasses.asdict(col.status),
            "stacks": {e.key: e.value for e in upd.entities if e.kind == "stack"},
            "names": {k: v["name"] for k, v in threads.items()},
            "pids": {k: v["pid"] for k, v in threads.items()},
        },
    }


def save(path: str, cap: dict) -> None:
    meta = np.frombuffer(json.dumps(cap["meta"], default=str).encode(), np.uint8)
    np.savez_compressed(path, intervals=cap["intervals"], samples=cap["samples"], meta=meta)


def load(path: str) -> dict:
    data = np.load(path)
    meta = json.loads(data["meta"].tobytes())
    return {"intervals": data["intervals"], "samples": data["samples"], "meta": meta}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--phases", action="store_true", help="capture the tests' phases target")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--tier", default="auto")
    args = ap.parse_args()
    if args.phases:
        sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "host"))
        from host_harness import phases

        with phases("--workers", "2") as (_proc, info):
            cap = capture(info["pid"], args.seconds, args.tier, py_rate_hz=10)
        cap["meta"]["info"] = info
    else:
        cap = capture(args.pid, args.seconds, args.tier)
    save(args.out, cap)


if __name__ == "__main__":
    main()
