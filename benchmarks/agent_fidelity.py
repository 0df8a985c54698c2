"""Does gtop see exactly what CUDA ran? Against torch.profiler, and under load.

    PYTHONPATH=$PWD python3 benchmarks/agent_fidelity.py OUT.json

1. Names and per-step counts: the same training loop (a small GPT, 60 steps after the
   same warm-up) runs once under torch.profiler (CUDA activity) and once launched under
   gtop; the kernel names (demangled) and per-step counts must be equal, and the mean
   durations of the top 10 kernels (by total time) within 5%, both sides over the same
   steady-state steps (the first 10 measured steps left out of both). Both means, their
   difference, its standard error and each side's step-to-step spread are printed: two
   separate runs differ by more than gtop's error (the second H200 run, 20 steps: one
   30 us kernel 5.06% apart).
2. Attach: a running loop is attached to; the first kernel row must arrive within 2 s.
3. Accounting at 100k+ records/s: CUDA graph replays (one kernel record per node) of
   an exactly known number of kernels, kernel records only; received + dropped must
   equal produced, with the default buffers and with a deliberately small pool (which
   forces drops).
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from agent_bench import attach_link, check, machine, run_section, start, table

from gtop.agent.cupti import CONCURRENT_KERNEL
from gtop.analysis.kernels.cuda_activity import kernel_summary, names_from_entities
from gtop.analysis.kernels.demangle import demangle
from gtop.collectors.agent.status import REFUSALS

STEPS = 60
"""Measured steps on both sides (the first H200 runs used 20)."""
SKIP = 10
"""Steps left out of the duration comparison on both sides: each kernel's first
SKIP x (its launches per step) instances, in launch order."""
EVERY_KERNEL = {"sample_above": 0}
"""Counts are compared kernel for kernel: kernel sampling off (``--trace-every-kernel``)."""
WARMUP = ["--warmup", "10", "--warmup-seconds", "2"]
"""The same warm-up before either side starts measuring (GPU clocks settle)."""
SMALL_GPT = ["--batch", "8", "--layers", "2", "--dim", "256", "--heads", "4", "--seq", "128"]


def steady(durations: list[float] | np.ndarray, per_step: int) -> np.ndarray:
    """The durations (launch order) after the first SKIP steps, as [steps, per_step]."""
    d = np.asarray(durations, dtype=float)[SKIP * per_step :]
    steps = len(d) // per_step
    return d[: steps * per_step].reshape(steps, per_step)


def compare(ours: np.ndarray, theirs: np.ndarray) -> dict[str, float]:
    """Means, medians, the difference, and each side's step-to-step spread (the
    standard deviation of the per-step mean duration, relative to the mean)."""
    a, b = ours.mean(), theirs.mean()
    per_a, per_b = ours.mean(axis=1), theirs.mean(axis=1)
    return {
        "gtop_mean_us": float(a),
        "torch_mean_us": float(b),
        "gtop_median_us": float(np.median(ours)),
        "torch_median_us": float(np.median(theirs)),
        "rel_diff": float(a / b - 1),
        "gtop_spread": float(per_a.std() / a),
        "torch_spread": float(per_b.std() / b),
        # standard error of the difference of the two means, relative (steps as samples)
        "rel_stderr": float(np.sqrt(per_a.var() / len(per_a) + per_b.var() / len(per_b)) / b),
        "steps": int(min(len(per_a), len(per_b))),
    }


def names_and_counts(results: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        prof_path = Path(tmp, "prof.json")
        # torch.profiler's run: its kernels inside the same STEPS measured steps
        run = start(
            "train_loop",
            [
                *SMALL_GPT,
                *WARMUP,
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
    run = start(
        "train_loop",
        [*SMALL_GPT, *WARMUP, "--steps", str(STEPS)],
        gtop_mode="default",
        options=EVERY_KERNEL,
    )
    try:
        res = run.read("result")
    finally:
        run.finish()  # the last buffers and their names arrive as the workload exits
    # the same window as torch.profiler's: the STEPS measured steps, GPU synchronised at
    # both ends (warm-up kernels before t0 are traced by gtop but not by the profiler)
    kernels = run.rows("kernel")
    kernels = kernels[(kernels["t_ns"] >= res["t0_ns"]) & (kernels["end_ns"] <= res["t1_ns"])]
    names = names_from_entities(run.entities)
    rows = kernel_summary(kernels, names)
    st = run.link.status()[run.proc.pid]
    # keyed like torch.profiler's (demangled names; kernels of one name merged)
    ours: dict[str, dict] = {}
    for r in rows:
        o = ours.setdefault(demangle(r.name), {"count": 0, "total_us": 0.0})
        o["count"] += r.count
        o["total_us"] += r.total_ns / 1e3
    for o in ours.values():
        o["mean_us"] = o["total_us"] / o["count"]
    # each kernel's durations in launch order, for the steady-state comparison
    order = np.argsort(kernels["t_ns"], kind="stable")
    durations: dict[str, list[float]] = {}
    for k in kernels[order]:
        name = demangle(names.get(int(k["name_id"]), f"<kernel {int(k['name_id'])}>"))
        durations.setdefault(name, []).append((int(k["end_ns"]) - int(k["t_ns"])) / 1e3)
    unnamed = sorted(k for k in ours if k.startswith("<kernel"))
    ours_counts = Counter({k: v["count"] for k, v in ours.items()})
    their_counts = Counter({k: v["count"] for k, v in theirs.items()})
    diff = [
        (name[:80], ours_counts[name], their_counts[name])
        for name in sorted(set(ours_counts) | set(their_counts))
        if ours_counts[name] != their_counts[name]
    ]
    results["names"] = {
        "gtop": ours,
        "torch_profiler": {k: {**v, "durations_us": None} for k, v in theirs.items()},
        "incomplete": st.incomplete,
        "unnamed": unnamed,
        "differences": diff,
        "steps": STEPS,
        "skip": SKIP,
        "warmup": WARMUP,
    }
    check(
        results,
        "kernel names and per-step counts equal torch.profiler's",
        not diff,
        f"gtop {len(ours)} kernels, {sum(ours_counts.values()) / STEPS:.1f} per step; "
        f"torch.profiler {len(theirs)} kernels, {sum(their_counts.values()) / STEPS:.1f} "
        f"per step; {len(unnamed)} names unresolved, {st.incomplete} incomplete records, "
        f"{st.dropped} dropped; {len(diff)} differences (name, gtop, torch): {diff[:8]}",
    )
    top = sorted(theirs, key=lambda k: -theirs[k]["total_us"])[:10]
    lines, worst, compared = [], 0.0, {}
    for name in top:
        per_step = max(1, theirs[name]["count"] // STEPS)
        mine = steady(durations.get(name, []), per_step)
        other = steady(theirs[name]["durations_us"], per_step)
        if not mine.size or not other.size:
            worst = float("inf")
            lines.append([name[:50], per_step, "", "", "missing", "", "", ""])
            continue
        c = compare(mine, other)
        compared[name] = c
        worst = max(worst, abs(c["rel_diff"]))
        lines.append(
            [
                name[:50],
                per_step,
                f"{c['torch_mean_us']:.2f} ({c['torch_median_us']:.2f})",
                f"{c['gtop_mean_us']:.2f} ({c['gtop_median_us']:.2f})",
                f"{c['rel_diff']:+.2%}",
                f"{c['rel_stderr']:.2%}",
                f"{c['torch_spread']:.1%}",
                f"{c['gtop_spread']:.1%}",
            ]
        )
    results["names"]["top10"] = compared
    table(
        f"top 10 kernels (by torch.profiler's total): mean (median) duration in us over steps "
        f"{SKIP + 1}..{STEPS} of {STEPS} on both sides (separate runs, same warm-up); "
        "stderr: standard error of the difference (steps as samples); spread: step-to-step "
        "standard deviation of the per-step mean",
        ["kernel", "/step", "torch", "gtop", "diff", "stderr", "torch spread", "gtop spread"],
        lines,
    )
    check(
        results,
        "top-10 mean durations within 5%",
        worst <= 0.05,
        f"worst |difference| {worst:.3%} over {STEPS - SKIP} steady-state steps",
    )


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
    """received + dropped == produced, exactly, at well over 100k records/s.

    Only kernel records are traced (``kernel`` mode), and the workload launches nothing
    before the agent is tracing (``go`` is sent after the ``tracing`` state), so the
    number CUPTI produced is exactly the number of kernels the workload launched after
    ``go``. Received = every kernel record decoded in the whole session (no time
    window: a drop count cannot be split by time, so neither may the received count);
    dropped = what CUPTI reported dropped, per buffer and once more at the end.
    (The first H200 run compared kernels inside [t0, t1] with drops of every kind, in
    default mode, and was off by one: a dropped synchronisation record.)
    """
    run = start(
        "graph_kernels",
        ["--nodes", "1000", "--replays", "300", "--wait-go"],
        gtop_mode="kernel",
        options=options,
    )
    try:
        run.read("ready", timeout=120)
        if run.link.wait(run.proc.pid, ("tracing", *REFUSALS), 30) is None:
            raise RuntimeError("the agent never started tracing (30 s)")
        run.send("go")
        res = run.read("result", timeout=300)
    finally:
        run.finish()  # waits for the exit and the last buffers, then stops the link
    st = run.link.status()[run.proc.pid]
    received = st.records_by_kind.get(CONCURRENT_KERNEL, 0)
    rows = len(run.rows("kernel"))
    produced = res["kernels"]
    rate = res["kernels_per_s"]
    results.setdefault("accounting", {})[label] = {
        "produced": produced,
        "received": received,
        "rows": rows,
        "dropped": st.dropped,
        "declined": st.declined,
        "other_records": st.records - received,
        "undecoded_bytes": st.undecoded_bytes,
        "agent_state": st.state,
        "records_per_s": rate,
        "capture": res.get("capture"),
        "options": options,
    }
    table(
        f"accounting ({label}): CUDA graph replays, kernel records only",
        ["produced", "received", "dropped", "sum", "rows", "records/s", "agent"],
        [[produced, received, st.dropped, received + st.dropped, rows, rate, st.state]],
    )
    check(
        results,
        f"received + dropped == produced ({label})",
        received + st.dropped == produced and rows == received,
        f"{received} + {st.dropped} = {received + st.dropped} vs {produced} launched "
        f"(decoded rows {rows}, other records {st.records - received}, "
        f"undecoded bytes {st.undecoded_bytes}; graph capture: {res.get('capture')})",
    )
    check(
        results,
        f"rate at least 100k records/s ({label})",
        rate >= 100_000,
        f"{rate:.0f} kernel records/s over the measured replays",
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    args = p.parse_args()
    results: dict = {"machine": machine()}
    sections = [
        ("names and counts", lambda: names_and_counts(results)),
        ("attach", lambda: first_row_after_attach(results)),
        (
            "accounting, default buffers",
            lambda: accounting(results, "default buffers", EVERY_KERNEL),
        ),
        (
            "accounting, small pool",
            lambda: accounting(
                results,
                "small pool, forced drops",
                {**EVERY_KERNEL, "buffers": 2, "buffer_bytes": 1 << 18},
            ),
        ),
    ]
    for title, section in sections:
        run_section(results, title, section)
    forced = results.get("accounting", {}).get("small pool, forced drops", {}).get("dropped", 0)
    check(results, "the small pool really dropped records", forced > 0, f"{forced} dropped")
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print(f"\nwrote {args.out}")
    return 0 if all(c["pass"] for c in results["checks"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
