"""What a probe costs a running Triton loop, and the verdict gtop gives it (issue 23).

Usage: python benchmarks/probe_attach_cost.py [--before S] [--record S] [-o OUT.json]

Starts ``workloads/triton_sleep_loop.py`` (20 launches of Triton kernel ``mm``, sync,
``time.sleep(0.01)``), measures its launches/s untraced for ``--before`` seconds, then
attaches ``gtop record --pid P --duration S --probe block_sched:mm`` (the probe turned on
as the Kernels tab's ``b`` does: 1 launch in N, N chosen by the agent to keep the cost
within 5%) and measures the rate again while recorded (from ``SETTLE_S`` after the
attach). Prints the ratio (traced / untraced; issue 23 asks >= 0.95), the verdict of
``gtop report --json`` (issue 23: "sleeping/blocked"), the probed launches, their 1-in-N
and the probe's cost as the agent measured it. ``--check`` exits 1 when either target
is missed. Needs a GPU, torch and Triton 3.6; about a minute.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORKLOAD = ROOT / "benchmarks" / "workloads" / "triton_sleep_loop.py"
SETTLE_S = 3.0
"""After the attach: the agent's start, the kernel's recompilation with the probe."""
MIN_RATIO = 0.95


def _reader(proc: subprocess.Popen, rates: list[tuple[int, float]], ready: threading.Event):
    for line in proc.stdout:
        if line.startswith("ready"):
            ready.set()
        elif line.startswith("rate "):
            v = json.loads(line[5:])
            rates.append((int(v["t_ns"]), float(v["launches_per_s"])))


def run(before_s: float, record_s: float, out: Path) -> dict:
    """One measurement: the workload's rates untraced and recorded, and gtop's verdict."""
    from gtop.probes.record_streams import LAUNCH_KIND
    from gtop.recordings.reader import Recording

    seconds = 20 + before_s + record_s + 10
    cmd = [sys.executable, str(WORKLOAD), "--seconds", str(seconds)]
    work = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    rates: list[tuple[int, float]] = []
    ready = threading.Event()
    threading.Thread(target=_reader, args=(work, rates, ready), daemon=True).start()
    try:
        if not ready.wait(120):
            raise RuntimeError("the workload never became ready")
        time.sleep(before_s)
        attach = time.monotonic_ns()
        gtop = [sys.executable, "-m", "gtop", "record", "--pid", str(work.pid), "--force"]
        gtop += ["--duration", str(record_s), "--probe", "block_sched:mm", "-o", str(out)]
        subprocess.run(gtop, check=True, cwd=ROOT, timeout=record_s + 60)
        detach = time.monotonic_ns()
    finally:
        work.terminate()
        work.wait(30)
    plain = [r for t, r in rates if t < attach]
    traced = [r for t, r in rates if attach + SETTLE_S * 1e9 <= t <= detach]
    report = subprocess.run(
        [sys.executable, "-m", "gtop", "report", str(out), "--json"],
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    verdict = json.loads(report.stdout).get("verdict") or {}
    with Recording(out) as rec:
        launches = [e.value for e in rec.entities(LAUNCH_KIND)]
        answers = [e.value for e in rec.entities("probe_control")]
    return {
        "untraced_launches_per_s": statistics.median(plain) if plain else None,
        "traced_launches_per_s": statistics.median(traced) if traced else None,
        "ratio": statistics.median(traced) / statistics.median(plain) if plain and traced else None,
        "verdict_kind": verdict.get("kind"),
        "verdict": verdict.get("headline"),
        "probed_launches": len(launches),
        "every": [v.get("every") for v in launches[-5:]],
        "probe_cost": [v.get("cost") for v in launches[-5:]],
        "dropped": sum(int(v.get("dropped", 0)) for v in launches),
        "agent_answers": [a.get("message") for a in answers],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=float, default=10.0, help="untraced seconds")
    p.add_argument("--record", type=float, default=20.0, help="recorded seconds")
    p.add_argument("-o", "--output", type=Path, help="write the result as JSON")
    p.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run(args.before, args.record, Path(tmp) / "probe.gtop")
    print("| untraced launches/s | recorded, block_sched on mm | ratio | verdict |")
    print("|---|---|---|---|")
    ratio = result["ratio"]
    print(
        f"| {result['untraced_launches_per_s'] or 0:,.0f} "
        f"| {result['traced_launches_per_s'] or 0:,.0f} "
        f"| {ratio if ratio is not None else float('nan'):.3f} | {result['verdict']} |"
    )
    print(
        f"probed launches {result['probed_launches']}, last 1-in-N {result['every']}, "
        f"probe cost {result['probe_cost']}, dropped {result['dropped']}"
    )
    print(f"agent: {result['agent_answers']}")
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    ok = ratio is not None and ratio >= MIN_RATIO and result["verdict_kind"] == "blocked"
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
