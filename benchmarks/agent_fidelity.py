"""Does gtop see exactly what CUDA ran? Against torch.profiler, and under load.

    PYTHONPATH=$PWD python3 benchmarks/agent_fidelity.py OUT.json

1. Names and per-step counts: the same training loop (a small GPT, fixed steps) runs once
   under torch.profiler (CUDA activity) and once launched under gtop; the kernel names
   (demangled) and per-step counts must be equal, and the mean durations of the top 10
   kernels (by total time) within 5%.
2. Attach: a running loop is attached to; the first kernel row must arrive within 2 s.
3. Accounting at 100k+ records/s: a launch-bound loop launching a known number of
   kernels; received + dropped must equal launched, with the default buffers and with a
   deliberately small pool (which forces drops).
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from agent_bench import attach_link, check, machine, start, table

from gtop.analysis.cuda_activity import kernel_summary, names_from_entities
from gtop.analysis.demangle import demangle

STEPS = 20
SMALL_GPT = ["--batch", "8", "--layers", "2", "--dim", "256", "--heads", "4", "--seq", "128"]


def names_and_counts(results: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        prof_path = Path(tmp, "prof.json")
        run = start(
            "train_loop",
            [
                *SMALL_GPT,
                "--steps",
                str(STEPS),
                "--torch-profiler",
                "--profile-out",
                str(prof_path),
            ],
        )
        run.read("result")
        run.finish()
        theirs = json.loads(prof_path.read_text())
    run = start("train_loop", [*SMALL_GPT, "--steps", str(STEPS)], gtop_mode="default")
    res = run.read("result")
    time.sleep(1.5)
    kernels = run.rows("kernel")
    kernels = kernels[(kernels["t_ns"] >= res["t0_ns"]) & (kernels["end_ns"] <= res["t1_ns"])]
    rows = kernel_summary(kernels, names_from_entities(run.entities))
    run.finish()
    incomplete = run.link.status()[run.proc.pid].incomplete
    ours = {demangle(r.name): {"count": r.count, "mean_us": r.mean_ns / 1e3} for r in rows}
    ours_counts = Counter({k: v["count"] for k, v in ours.items()})
    their_counts = Counter({k: v["count"] for k, v in theirs.items()})
    diff = sorted(set(ours_counts.items()) ^ set(their_counts.items()))
    results["names"] = {"gtop": ours, "torch_profiler": theirs, "incomplete": incomplete}
    check(
        results,
        "kernel names and per-step counts equal torch.profiler's",
        not diff,
        f"{len(ours)} kernels, {sum(ours_counts.values()) / STEPS:.0f} per step, "
        f"{incomplete} incomplete records; differences: {diff[:6]}",
    )
    top = sorted(theirs, key=lambda k: -theirs[k]["total_us"])[:10]
    lines, worst = [], 0.0
    for name in top:
        their_mean = theirs[name]["total_us"] / theirs[name]["count"]
        our_mean = ours.get(name, {}).get("mean_us", float("nan"))
        err = abs(our_mean / their_mean - 1)
        worst = max(worst, err) if err == err else float("inf")
        lines.append([name[:60], theirs[name]["count"] // STEPS, their_mean, our_mean, err])
    table(
        "top 10 kernels: mean duration (us)", ["kernel", "/step", "torch", "gtop", "rel err"], lines
    )
    check(results, "top-10 mean durations within 5%", worst <= 0.05, f"worst {worst:.3%}")


def first_row_after_attach(results: dict) -> None:
    run = start("train_loop", [*SMALL_GPT, "--seconds", "20"])
    try:
        run.read("ready")
        t0 = time.monotonic()
        attach_s = attach_link(run)
        while not len(run.rows("kernel")) and time.monotonic() - t0 < 10:
            time.sleep(0.01)
        first = time.monotonic() - t0
        run.link.stop()
    finally:
        run.proc.kill()
        run.finish()
    results["attach"] = {"inject_s": attach_s, "first_kernel_s": first}
    check(
        results,
        "first kernel row within 2 s of attaching",
        first <= 2.0,
        f"{first:.2f} s (injection {attach_s:.2f} s)",
    )


def accounting(results: dict, label: str, options: dict) -> None:
    run = start(
        "tiny_kernels",
        ["--ops", "100", "--steps", "3000", "--wait-go"],
        gtop_mode="default",
        options=options,
    )
    run.read("ready")
    deadline = time.monotonic() + 20
    while run.link.wait(run.proc.pid, ("tracing",), 0.1) is None:
        assert time.monotonic() < deadline, "agent never started tracing"
    run.send("go")
    res = run.read("result")
    time.sleep(1.5)
    kernels = run.rows("kernel")
    received = int((kernels["t_ns"] >= res["t0_ns"]).sum())
    run.finish()
    st = run.link.status()[run.proc.pid]
    rate = res["kernels"] / res["seconds"]
    results.setdefault("accounting", {})[label] = {
        "launched": res["kernels"],
        "received": received,
        "dropped": st.dropped,
        "records_per_s": rate,
    }
    table(
        f"accounting ({label})",
        ["launched", "received", "dropped", "records/s"],
        [[res["kernels"], received, st.dropped, rate]],
    )
    check(
        results,
        f"received + dropped == launched ({label})",
        received + st.dropped == res["kernels"],
        f"{received} + {st.dropped} vs {res['kernels']}",
    )
    check(results, f"rate at least 100k records/s ({label})", rate >= 100_000, f"{rate:.0f}/s")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    args = p.parse_args()
    results: dict = {"machine": machine()}
    names_and_counts(results)
    first_row_after_attach(results)
    accounting(results, "default buffers", {})
    accounting(results, "small pool, forced drops", {"buffers": 2, "buffer_bytes": 1 << 18})
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {args.out}")
    return 0 if all(c["pass"] for c in results["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
