"""Probe overhead per kernel: median slowdown of each probe, timed with CUDA events.

Usage: python benchmarks/probe_overhead.py OUT.json [--reps N]

Every corpus workload (benchmarks/gpu_workloads.py) runs from its original PTX and from
PTX instrumented with block_sched, tensorop and mem_trace (1/1, 1/8, 1/64 sampling), all
JIT-loaded with cuModuleLoadData. Launches are interleaved round-robin, in an order
that reverses every round, so clock drift hits every variant alike; each launch is timed
alone (event, launch, event), after its output reset, its probe-counter reset and a
write of 256 MiB that leaves the L2 cache (50 MiB on an H100) holding none of the
previous variant's data or dirty lines. Each probed run's outputs are checked against the
original run's (bitwise for integer/elementwise kernels, within rounding otherwise).
Prints a Markdown table beside Neutrino's published 1.04x (lightweight) and 7.12x
(memory tracing), and writes every number, the GPU, the driver and the command to JSON.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import platform
import statistics
import sys
import time
import traceback

import torch
from gpu_workloads import Workload, load_probed, load_ptx, same, workloads

VARIANTS = [
    ("block_sched", 1),
    ("tensorop", 1),
    ("mem_trace", 1),
    ("mem_trace", 8),
    ("mem_trace", 64),
]
NEUTRINO = {"lightweight": 1.04, "mem_trace": 7.12}


def _label(probe: str, sample: int) -> str:
    return f"{probe} 1/{sample}" if probe == "mem_trace" else probe


def _driver_version() -> str:
    from cuda.bindings import driver

    err, version = driver.cuDriverGetVersion()
    ok = err == driver.CUresult.CUDA_SUCCESS
    return f"{version // 1000}.{version % 1000 // 10}" if ok else "unknown"


def measure(reps: int) -> list[dict]:
    """One row per workload; a workload that fails gets an ``error`` row, the rest run."""
    results = []
    for w in workloads():
        t_start = time.perf_counter()
        try:
            row = measure_one(w, reps)
        except Exception as e:  # one shot on the GPU machine: report and go on
            row = {"kernel": w.name, "error": f"{type(e).__name__}: {e}"}
            row["traceback"] = traceback.format_exc()
            print(row["traceback"], file=sys.stderr)
        row["seconds"] = time.perf_counter() - t_start
        results.append(row)
        print(f"  {w.name}: {row['seconds']:.1f}s {row.get('error', '')}", file=sys.stderr)
    return results


L2_FLUSH_BYTES = 256 << 20


def measure_one(w: Workload, reps: int) -> dict:
    """Median times of the original and every probe variant of one workload."""
    base = load_ptx(w.ptx)
    w.run(base)
    torch.cuda.synchronize()
    want = [t.clone() for t in w.outputs]
    runs = {"original": (base, None)}
    for probe, sample in VARIANTS:
        _, module, bufs = load_probed(w, probe, sample)
        runs[_label(probe, sample)] = (module, bufs)
    times: dict[str, list[float]] = {name: [] for name in runs}
    drops: dict[str, float] = {}
    counts: dict[str, tuple[int, int]] = {}  # records kept, dropped
    ok: dict[str, bool] = {}
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for rep in range(reps + 2):
        order = list(runs) if rep % 2 == 0 else list(reversed(runs))
        for name in order:
            module, bufs = runs[name]
            w.prepare()
            if bufs is not None:
                bufs.reset(clear=False)
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(True)
            start.record()
            w.run(module, prepare=False)
            end.record()
            end.synchronize()
            if rep >= 2:  # two warm-up rounds
                times[name].append(start.elapsed_time(end))
            if rep == reps + 1:
                ok[name] = same(w.outputs, want, exact=w.exact)
                if bufs is not None:
                    rec, overflow = bufs.read()
                    drops[name] = overflow / max(len(rec) + overflow, 1)
                    counts[name] = (len(rec), overflow)
    base_ms = statistics.median(times["original"])
    row = {"kernel": w.name, "warps": w.warps, "original_ms": base_ms, "probes": {}}
    for name in runs:
        if name == "original":
            continue
        med = statistics.median(times[name])
        row["probes"][name] = {
            "median_ms": med,
            "slowdown": med / base_ms,
            "dropped_frac": drops[name],
            "records_kept": counts[name][0],
            "records_dropped": counts[name][1],
            "results_unchanged": ok[name],
        }
    for _, bufs in runs.values():
        if bufs is not None:
            bufs.close()
    return row


def table(results: list[dict]) -> str:
    names = [_label(p, s) for p, s in VARIANTS]
    lines = [
        "| kernel | original ms | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['kernel']} | error (below) |" + " |" * len(names))
            continue
        cells = []
        for n in names:
            p = r["probes"][n]
            flag = "" if p["results_unchanged"] else " (CHANGED)"
            kept, dropped = p.get("records_kept", 0), p.get("records_dropped", 0)
            if n.startswith("mem_trace") or dropped:
                # the last rep's launch: records kept / dropped (ring full)
                drop = f" ({kept} kept, {dropped} dropped)"
            else:
                drop = ""
            cells.append(f"{p['slowdown']:.3f}x{drop}{flag}")
        lines.append(f"| {r['kernel']} | {r['original_ms']:.3f} | " + " | ".join(cells) + " |")
    neutrino = NEUTRINO["lightweight"], NEUTRINO["mem_trace"]
    lines.append(
        f"| Neutrino (published) | | {neutrino[0]}x | {neutrino[0]}x | {neutrino[1]}x | | |"
    )
    errors = [f"{r['kernel']}: {r['error']}" for r in results if "error" in r]
    if errors:
        lines += ["", "Errors (full text; tracebacks in the JSON):", *errors]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument(
        "--watchdog", type=float, default=540, help="dump all stacks and exit after S seconds"
    )
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.watchdog, exit=True)  # never hang silently
    torch.zeros(1, device="cuda")
    results = measure(args.reps)
    md = table(results)
    print(md)
    meta = {
        "gpu": torch.cuda.get_device_name(),
        "driver": _driver_version(),
        "torch": torch.__version__,
        "host": platform.node(),
        "command": " ".join(sys.argv),
        "reps": args.reps,
        "neutrino_published": NEUTRINO,
        "results": results,
        "table_markdown": md,
    }
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)
    bad = [
        (r["kernel"], n)
        for r in results
        for n, p in r.get("probes", {}).items()
        if not p["results_unchanged"]
    ]
    bad += [(r["kernel"], r["error"]) for r in results if "error" in r]
    if bad:
        print(f"FAILED: results changed under probes: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
