"""What gtop's agent costs the target, against no profiler and torch.profiler.

    PYTHONPATH=$PWD python3 benchmarks/agent_overhead.py OUT.json [--seconds 4]

Each mode runs the workload in its own process and measures steps/s inside it (GPU
synchronised at both ends). Modes: ``none`` (twice, first and last, averaged: steps/s
drift between runs), ``gtop`` (launched with the agent, default kinds), ``gtop-full``
(every kind), ``torch.profiler`` (CUDA activity only). Workloads: ``train_loop``
(GPU-bound) and ``tiny_kernels`` (launch-bound). Then clean detach: a bare run is
attached to mid-way and detached, and its steps/s before, during and after are compared.

Checks: gtop costs less than torch.profiler on both workloads; gtop within 1% of none on the
GPU-bound one; after detach within 3% of before. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from agent_bench import attach_link, check, machine, start, table

WORKLOADS = {
    "train_loop": ["--batch", "64"],
    "tiny_kernels": ["--ops", "100"],
}
MODES = ("none", "gtop", "torch.profiler", "gtop-full", "none")


def measure(workload: str, mode: str, seconds: float) -> dict:
    args = [*WORKLOADS[workload], "--seconds", str(seconds)]
    gtop_mode = {"gtop": "default", "gtop-full": "full"}.get(mode)
    if mode == "torch.profiler":
        args.append("--torch-profiler")
    run = start(workload, args, gtop_mode=gtop_mode)
    try:
        result = run.read("result")
        if run.link is not None:
            time.sleep(1.0)  # last buffers
            st = run.link.status()[run.proc.pid]
            result.update(
                agent_state=st.state,
                records=st.records,
                dropped=st.dropped,
                incomplete=st.incomplete,
                records_per_s=st.records / result["seconds"],
            )
        return result
    finally:
        run.finish()


def detach_phases(workload: str, phase_s: float) -> dict:
    """steps/s before attaching, while attached, and after detaching (one process)."""
    args = [*WORKLOADS[workload], "--seconds", str(3 * phase_s + 3), "--report-every", "0.5"]
    run = start(workload, args)
    try:
        run.read("ready")
        marks = {"t_start": time.monotonic_ns()}
        time.sleep(phase_s)
        marks["t_attach"] = time.monotonic_ns()
        attach_s = attach_link(run)
        time.sleep(phase_s)
        marks["t_detach"] = time.monotonic_ns()
        run.link.stop()
        time.sleep(phase_s + 3)
        run.read("result")
    finally:
        run.finish()
    rates = [(p["t_ns"], p["steps_per_s"]) for w, p in run.lines if w == "rate"]
    settle = int(1e9)  # leave out the second after each transition

    def mean(t0: int, t1: int) -> float:
        vals = [r for t, r in rates if t0 + settle <= t <= t1]
        return float(np.mean(vals)) if vals else float("nan")

    return {
        "attach_s": attach_s,
        "before": mean(marks["t_start"], marks["t_attach"]),
        "attached": mean(marks["t_attach"], marks["t_detach"]),
        "after": mean(marks["t_detach"], marks["t_detach"] + int((phase_s + 3) * 1e9)),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--phase", type=float, default=4.0, help="seconds per detach phase")
    args = p.parse_args()
    results: dict = {"machine": machine(), "runs": {}, "detach": {}}
    for workload in WORKLOADS:
        runs = [(mode, measure(workload, mode, args.seconds)) for mode in MODES]
        base = float(np.mean([r["steps_per_s"] for m, r in runs if m == "none"]))
        by_mode: dict[str, dict] = {}
        for mode, r in runs:
            r["relative"] = r["steps_per_s"] / base
            by_mode.setdefault(mode, r)
        results["runs"][workload] = {"baseline_steps_per_s": base, "modes": dict(runs)}
        table(
            f"{workload}: steps/s relative to no profiler ({base:.1f} steps/s)",
            ["mode", "steps/s", "relative", "records/s", "dropped"],
            [
                [
                    m,
                    r["steps_per_s"],
                    r["relative"],
                    r.get("records_per_s", ""),
                    r.get("dropped", ""),
                ]
                for m, r in runs
            ],
        )
        gtop, prof = by_mode["gtop"]["relative"], by_mode["torch.profiler"]["relative"]
        check(
            results,
            f"{workload}: gtop costs less than torch.profiler",
            gtop > prof,
            f"gtop {gtop:.3f} vs torch.profiler {prof:.3f} of baseline",
        )
        if workload == "train_loop":
            check(results, "train_loop: gtop within 1% of no profiler", gtop >= 0.99, f"{gtop:.4f}")
        d = detach_phases(workload, args.phase)
        results["detach"][workload] = d
        table(
            f"{workload}: clean detach (steps/s)",
            ["attach s", "before", "attached", "after", "after/before"],
            [[d["attach_s"], d["before"], d["attached"], d["after"], d["after"] / d["before"]]],
        )
        ratio = d["after"] / d["before"]
        check(
            results,
            f"{workload}: steps/s back to baseline after detach",
            abs(ratio - 1) <= 0.03,
            f"after/before {ratio:.4f}",
        )
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {args.out}")
    return 0 if all(c["pass"] for c in results["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
