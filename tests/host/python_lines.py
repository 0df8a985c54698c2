"""Which line each phase of ``benchmarks/workloads/py_lines.py`` was at, as a collector saw it.

Shared by the CPU test (tests/host/test_host_python_lines.py) and the GPU one
(tests/gpu/test_python_lines_gpu.py): the workload logs each phase's start and end on
CLOCK_MONOTONIC, and a phase's time counts as framed where an interval of the main
thread covering it carries a stack with the phase's ``py_lines.py:LINE``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from host_harness import Run, collect, target

from gtop.collectors.threads.tiers import open_thread_collector

WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads" / "py_lines.py"


def run_lines(tier: str, log: Path, *args: str, window_s: float = 4.0) -> tuple[dict, Run]:
    """The workload under ``tier`` for ``window_s`` after a warm-up."""
    with target(WORKLOAD, "--log", str(log), *args, timeout=60) as (_proc, info):
        run = collect(
            lambda hub, pid: open_thread_collector(hub, pid, tier=tier),
            info["pid"],
            [info["tid"]],
            window_s=window_s,
        )
    return info, run


def framed_shares(info: dict, run: Run, log: Path) -> dict[str, tuple[float, int]]:
    """``{phase: (share of its time framed at its line, phases seen)}`` over the window."""
    rows = run.intervals[run.intervals["tid"] == info["tid"]]
    out = {}
    for name, line in info["lines"].items():
        mark = f"(py_lines.py:{line})"
        good = np.array(
            [any(f.endswith(mark) for f in run.frames(int(s))) for s in rows["stack_id"]]
        )
        total = framed = 0
        for text in log.read_text().splitlines():
            phase, t0, t1 = text.split()
            t0, t1 = int(t0), int(t1)
            if phase != name or t0 < run.t0 or t1 > run.t1:
                continue
            overlap = np.clip(
                np.minimum(rows["end_ns"], t1) - np.maximum(rows["t_ns"], t0), 0, None
            )
            total += t1 - t0
            framed += int(overlap[good].sum())
        out[name] = (framed / total if total else 0.0, total)
    return out
