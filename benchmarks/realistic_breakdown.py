"""Realistic workloads before and after their fix, recorded under gtop (GPU machine).

    python benchmarks/realistic_breakdown.py --out DIR [--seconds 12]

Pairs: a batch-1 decode loop (launch-bound) eager vs CUDA Graphs, and a training loop
with a CPU-bound DataLoader with 1 vs 8 workers. Each run is recorded with
``gtop record --agent-mode full`` to DIR/NAME.gtop; gtop's breakdown of GPU 0 over the
workload's measured window is printed as shares (GAR and each off-GPU cause), with the
cause gtop names as dominant, so the before/after movement can be read off. The loader
pair prints the GAR it predicts from its own calibration (GPU step vs CPU batch time).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from check_shares import measure, record_workload, shares

from gtop.analysis.attribution.causes import LABELS

RUNS = {
    "decode-eager": ["decode_loop.py"],
    "decode-graphs": ["decode_loop.py", "--graphs"],
    "loader-1-worker": ["cpu_bound_loader.py", "--workers", "1"],
    "loader-8-workers": ["cpu_bound_loader.py", "--workers", "8"],
}


def record(name: str, args: list[str], out: Path, seconds: float) -> dict:
    recording = out / f"{name}.gtop"
    workload = record_workload(args[0], [*args[1:], "--seconds", str(seconds)], recording)
    entry = measure(str(recording), workload["window_ns"])
    return {"name": name, "workload": workload, "entry": entry}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--runs", default=",".join(RUNS))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.runs.split(","):
        try:
            results.append(record(name, RUNS[name], args.out, args.seconds))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"{name}: FAILED {exc}", file=sys.stderr)
    (args.out / "realistic_breakdown.json").write_text(json.dumps(results, indent=1))
    causes = list(LABELS)
    print("| run | steps/s | predicted GAR | GAR | " + " | ".join(causes) + " | dominant off-GPU |")
    print("|---|---|---|---|" + "---|" * len(causes) + "---|")
    for r in results:
        share = shares(r["entry"])
        top = max(r["entry"]["off"], key=lambda c: r["entry"]["off"][c])
        rate = r["workload"].get("steps_per_s") or r["workload"].get("tokens_per_s") or ""
        rate = f"{rate:.1f}" if isinstance(rate, float) else str(rate)
        predicted = r["workload"].get("predicted_gar")
        predicted = f"{predicted:.1%}" if isinstance(predicted, float) else ""
        print(
            f"| {r['name']} | {rate} | {predicted} | {r['entry']['gar']:.1%} | "
            + " | ".join(f"{share.get(c, 0):.1%}" for c in causes)
            + f" | {top} |"
        )
    return 0 if len(results) == len(args.runs.split(",")) else 1


if __name__ == "__main__":
    raise SystemExit(main())
