"""Four workloads with a known fix, recorded before and after it in gtop's DEFAULT agent
mode (GPU machine): does the verdict name the cause, and does the fix move it?

    python benchmarks/diagnosis_pairs.py --out DIR [--pairs decode,item] [--seconds 4]

Pairs (before → after): eager decode → CUDA graphs (``decode_loop.py``); 1 → 8 DataLoader
workers (``cpu_bound_loader.py``); ``.item()`` every step → never (``item_sync.py``);
numpy preprocessing on the host → on the GPU (``host_preprocess.py``). Each run is
``gtop record -o DIR/NAME.gtop -- python benchmarks/workloads/...`` (default mode) and
its workload JSON line goes to DIR/NAME.json (``--analyse``: measure those already in
DIR, e.g. ``--out recordings/fixes --analyse``). The table shows, per run, GAR over the
workload's own window (the truth's window) and what ``gtop report --json`` says of the
whole recording (its GAR and verdict: kind, cause and that cause's share), then per pair
whether the fix raised GAR and lowered the share of the cause named before it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from check_shares import measure, record_workload

PAIRS = {
    "decode": (
        ("decode-eager", ["decode_loop.py"]),
        ("decode-graphs", ["decode_loop.py", "--graphs"]),
    ),
    "loader": (
        ("loader-1-worker", ["cpu_bound_loader.py", "--workers", "1"]),
        ("loader-8-workers", ["cpu_bound_loader.py", "--workers", "8"]),
    ),
    "item": (
        ("item-every-step", ["item_sync.py", "--item-every", "1"]),
        ("item-never", ["item_sync.py", "--item-every", "0"]),
    ),
    "preprocess": (
        ("preprocess-host", ["host_preprocess.py"]),
        ("preprocess-gpu", ["host_preprocess.py", "--on-gpu"]),
    ),
}


def report(recording: Path) -> dict:
    """``gtop report --json`` of a recording, as a user runs it."""
    cmd = [sys.executable, "-m", "gtop", "report", "--json", str(recording)]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def run(name: str, args: list[str], out: Path, seconds: float, analyse: bool) -> dict:
    """Record one run (or, with ``analyse``, read the one already in ``out``) and
    measure it."""
    recording = out / f"{name}.gtop"
    if analyse:
        workload = json.loads((out / f"{name}.json").read_text())
    else:
        argv = [*args[1:], "--seconds", str(seconds)]
        workload = record_workload(args[0], argv, recording, "default")
        (out / f"{name}.json").write_text(json.dumps(workload, indent=1))
    rep = report(recording)
    verdict = rep.get("verdict") or {}
    entry = rep["gpu"].get(str(verdict.get("device", 0)), {})
    return {
        "name": name,
        "workload": workload,
        "window": measure(str(recording), workload["window_ns"]),
        "report_gar": entry.get("gar"),
        "report_s": entry.get("duration_s"),
        "shares": {
            k: v / entry["duration_s"]
            for part in ("on_s", "off_s")
            for k, v in entry.get(part, {}).items()
            if entry.get("duration_s")
        },
        "verdict": verdict,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--pairs", default=",".join(PAIRS))
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument(
        "--analyse", action="store_true", help="measure the recordings already in --out"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict]] = {}
    ok = True
    for pair in args.pairs.split(","):
        for name, argv in PAIRS[pair]:
            try:
                results.setdefault(pair, []).append(
                    run(name, argv, args.out, args.seconds, args.analyse)
                )
            except (RuntimeError, subprocess.SubprocessError, KeyError) as exc:
                print(f"{name}: FAILED {exc}", file=sys.stderr)
                ok = False
    if not args.analyse:
        (args.out / f"diagnosis_pairs-{'-'.join(results)}.json").write_text(
            json.dumps(results, indent=1)
        )
    print("| run | GAR (workload window) | GAR (report) | report s | verdict | cause share |")
    print("|---|---|---|---|---|---|")
    for runs in results.values():
        for r in runs:
            v = r["verdict"]
            share = r["shares"].get(v.get("cause"), 0.0)
            print(
                f"| {r['name']} | {r['window']['gar']:.1%} | {r['report_gar'] or 0:.1%} | "
                f"{r['report_s'] or 0:.1f} | {v.get('kind')}: {v.get('cause')} | {share:.1%} |"
            )
    print("\n| pair | cause named before | share before → after | GAR before → after | fix works |")
    print("|---|---|---|---|---|")
    for pair, runs in results.items():
        if len(runs) != 2:
            continue
        before, after = runs
        cause = before["verdict"].get("cause")
        s0, s1 = before["shares"].get(cause, 0.0), after["shares"].get(cause, 0.0)
        g0, g1 = before["report_gar"] or 0.0, after["report_gar"] or 0.0
        works = g1 > g0 and s1 < s0
        ok &= works
        print(
            f"| {pair} | {before['verdict'].get('kind')}: {cause} | {s0:.1%} → {s1:.1%} | "
            f"{g0:.1%} → {g1:.1%} | {'yes' if works else 'NO'} |"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
