"""Each committed before/after pair's "after" predicted from its "before" (issue 25).

    python benchmarks/what_if_pairs.py [--dir recordings/fixes] [--json OUT]

For each pair the what-if engine (:mod:`gtop.analysis.diagnosis.what_if`) reads only the "before"
recording, replays it with the pair's fix (the change a user would ask about) and
predicts the speedup (steps/s, or tokens/s) and the GAR after. Measured beside it: the
speedup from the workloads' own throughput (the pair's ``.json`` sidecars) and the GAR
``gtop report`` gives the "after" recording; neither is shown to the engine. A pair
passes when the predicted speedup is within 25% of the measured one and the predicted
GAR within 10 points.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gtop.analysis.diagnosis.gains import kernel_change, predict, times, top_kernel  # noqa: E402
from gtop.analysis.diagnosis.what_if import parse_change  # noqa: E402
from gtop.recordings.reader import Recording  # noqa: E402
from gtop.recordings.report_data import read_report  # noqa: E402
from gtop.recordings.timeline import read_timeline  # noqa: E402

PAIRS = (
    ("decode: eager → CUDA graphs", "decode-eager", "decode-graphs", "graphs"),
    ("loader: 1 → 8 workers", "loader-1-worker", "loader-8-workers", "loader"),
    ("item: every step → never", "item-every-step", "item-never", "sync=0"),
    ("preprocess: host → GPU", "preprocess-host", "preprocess-gpu", "offload"),
    ("TF32 matmul, GPU-bound", "kernel-gpu-fp32", "kernel-gpu-tf32", "KERNEL"),
    ("TF32 matmul, host-bound", "kernel-host-fp32", "kernel-host-tf32", "KERNEL"),
)
"""(name, before, after, the change asked); the kernel-speedup pairs when recorded
(``benchmarks/workloads/kernel_speedup.py``) ask for the before run's busiest kernel
(its FP32 matmul) at the speed TF32 gives it (:func:`tf32_ratio`)."""
SPEEDUP_TOLERANCE = 0.25
GAR_TOLERANCE = 0.10


def rate(sidecar: Path) -> float:
    """The workload's own throughput (steps/s or tokens/s)."""
    doc = json.loads(sidecar.read_text())
    return float(doc.get("steps_per_s") or doc["tokens_per_s"])


def report_gar(path: Path) -> float:
    """GAR as ``gtop report`` gives it (the verdict's device)."""
    with Recording(path) as rec:
        report = read_report(rec)
    return float(report["verdict"]["gar"])


def tf32_ratio(directory: Path) -> float:
    """The matmul's TF32 time over its FP32 time: ``kernel_speedup.py --measure-kernels``
    measured it on its own (CUDA events, no host work) into ``kernel-speedup.json``, not
    a pair's sidecar."""
    return float(json.loads((directory / "kernel-speedup.json").read_text())["tf32_over_fp32"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=ROOT / "recordings" / "fixes")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    rows = []
    for name, before, after, change in PAIRS:
        paths = [args.dir / f"{n}.{ext}" for n in (before, after) for ext in ("gtop", "json")]
        if not all(p.exists() for p in paths):
            continue
        t = time.perf_counter()
        with Recording(paths[0]) as rec:
            tl = read_timeline(rec)
        if tl is None:
            continue
        if change == "KERNEL":
            if not (args.dir / "kernel-speedup.json").exists() or top_kernel(tl) is None:
                continue
            change = kernel_change(top_kernel(tl), tf32_ratio(args.dir)).text()
        p = predict(tl, [parse_change(change)])
        seconds = time.perf_counter() - t
        measured = rate(paths[3]) / rate(paths[1])
        gar_after = report_gar(paths[2])
        ok = abs(p.speedup / measured - 1) <= SPEEDUP_TOLERANCE and (
            abs(p.gar_after - gar_after) <= GAR_TOLERANCE
        )
        rows.append(
            {
                "pair": name,
                "change": change,
                "step_ms": round(p.before_step_s * 1e3, 3) if p.before_step_s else None,
                "predicted": round(p.speedup, 3),
                "low": round(p.low, 3),
                "high": round(p.high, 3),
                "measured": round(measured, 3),
                "gar_before": round(p.gar_before, 3),
                "gar_after_predicted": round(p.gar_after, 3),
                "gar_after_measured": round(gar_after, 3),
                "seconds": round(seconds, 2),
                "ok": ok,
            }
        )
    head = (
        f"{'pair':30} {'--what-if':18} {'step':>9} {'predicted':>18} {'measured':>9} "
        f"{'GAR before':>10} {'after pred.':>11} {'after meas.':>11} {'s':>5}  ok"
    )
    print(head)
    for r in rows:
        step = f"{r['step_ms']:.2f} ms" if r["step_ms"] else "-"
        pred = f"{times(r['predicted'])} ({times(r['low'])}–{times(r['high'])})"
        measured = f"×{r['measured']:.2f}"
        print(
            f"{r['pair']:30} {r['change'][:18]:18} {step:>9} {pred:>18} "
            f"{measured:>9} {r['gar_before']:>10.1%} "
            f"{r['gar_after_predicted']:>11.1%} {r['gar_after_measured']:>11.1%} "
            f"{r['seconds']:>5.2f}  {'yes' if r['ok'] else 'NO'}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
