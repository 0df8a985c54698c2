"""Record each constructed workload under gtop and check the measured shares (GPU machine).

    python benchmarks/constructed_shares.py --out DIR [--cases app,sleep,io,tiny,hostfunc]

For each case: ``gtop record --agent-mode MODE -o DIR/constructed-CASE.gtop -- python
benchmarks/workloads/constructed.py --case CASE`` (MODE: ``--agent-mode``, full unless
given); the workload's JSON line (window and expected shares) goes to
DIR/constructed-CASE.json; gtop's breakdown over that window is compared with it (±3
points). Prints a Markdown table; exit 1 if a share is off, or if the ``io`` case's
recording has no on-CPU time inside I/O syscalls (the host tier was not BPF, or its
collector predates that data: the ``H:IO`` share would then miss the reads' own kernel
work).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from check_shares import compare, measure, on_cpu_io_s, record_workload


def run_case(case: str, out: Path, seconds: float, mode: str = "full") -> dict:
    recording = out / f"constructed-{case}.gtop"
    args = ["--case", case, "--seconds", str(seconds), "--io-dir", str(out)]
    workload = record_workload("constructed.py", args, recording, mode)
    (out / f"constructed-{case}.json").write_text(json.dumps(workload, indent=1))
    entry = measure(str(recording), workload["window_ns"])
    return {
        "case": case,
        "workload": workload,
        "entry": entry,
        "rows": compare(workload["expected"], entry, workload.get("tolerance_pp", 3.0)),
        "on_cpu_io_s": on_cpu_io_s(str(recording), workload["window_ns"]),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cases", default="app,sleep,io,tiny,hostfunc")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--agent-mode", default="full", help="gtop record's --agent-mode")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results, ok = [], True
    for case in args.cases.split(","):
        try:
            results.append(run_case(case, args.out, args.seconds, args.agent_mode))
        except (RuntimeError, subprocess.TimeoutExpired, KeyError) as exc:
            print(f"{case}: FAILED {exc}", file=sys.stderr)
            ok = False
    (args.out / "constructed_shares.json").write_text(json.dumps(results, indent=1))
    print("| case | cause | expected | measured | within 3 points |")
    print("|---|---|---|---|---|")
    for r in results:
        for row in r["rows"]:
            exp, got = row["expected"], row["measured"]
            fmt = (lambda v: f"{v:.1%}") if isinstance(exp, float) else str
            print(
                f"| {r['case']} | {row['cause']} | {fmt(exp)} | {fmt(got)} | "
                f"{'yes' if row['ok'] else 'NO'} |"
            )
            ok &= row["ok"]
        off = {k: round(v, 3) for k, v in r["entry"]["off"].items() if v}
        print(f"| {r['case']} | (all off-GPU causes, s) | | {off} | |")
        io_s = r["on_cpu_io_s"]
        print(f"| {r['case']} | (on-CPU in I/O syscalls, s) | | {io_s:.3f} | |")
        if r["case"] == "io" and io_s <= 0:
            print("io: the recording marks no on-CPU time in I/O syscalls", file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
