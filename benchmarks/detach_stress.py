"""Detach gtop's agent from a launch-bound target again and again; count targets that die.

Each round starts tests/agent/targets/torch_loop.py under a fresh agent link and spins
its eager loop (tens of thousands of kernels/s, so the agent samples). A third of the
way in, gtop detaches in the phase asked for: ``on`` (tracing) or ``off`` (a sampling
off phase); ``stay`` never detaches (the target exits traced); ``none`` runs without
gtop. Then the target runs 2000 more steps: a round fails when it dies or stops
answering, and the steps/s after detaching tell what the agent left behind.

    python3 benchmarks/detach_stress.py --rounds 5 --variants on,off,on:finalize=false,none

A variant is PHASE[:OPTION=JSON...]; options go to the agent (gtop.agent.runtime.start).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "agent")]

from agent_helpers import Received, open_now, script, start_target  # noqa: E402

from gtop.collectors.agent.link import AgentLink  # noqa: E402
from gtop.core.hub import Hub  # noqa: E402

AFTER_STEPS = 2000


def detach_in(phase: str, link: AgentLink, got: Received, spin_s: float) -> float:
    """Detach at the first moment in ``phase`` after a third of the spin; seconds in."""
    t0 = time.monotonic()
    time.sleep(spin_s / 3)
    while open_now(got) != (phase == "off") and time.monotonic() - t0 < spin_s * 0.9:
        time.sleep(0.005)
    link.stop()
    return time.monotonic() - t0


def one_round(phase: str, options: dict, spin_s: float) -> dict:
    hub = Hub()
    got = Received(hub.subscribe())
    link = AgentLink(hub, options=options or None).start() if phase != "none" else None
    procs: list = []
    out: dict = {"phase": phase, "options": options}
    try:
        target = start_target(procs, script("torch_loop.py"), None, link, ready_s=60)
        if link is not None:
            link.wait(target.pid, ("tracing",), 20)
        target.send(f"spin {spin_s}")
        if phase in ("on", "off"):
            out["detached_at_s"] = round(detach_in(phase, link, got, spin_s), 3)
        try:
            target.readline(spin_s + 40)
            _, t0, t1 = target.ask(f"steps {AFTER_STEPS}").split()
            out["steps_per_s_after"] = AFTER_STEPS / ((int(t1) - int(t0)) / 1e9)
            target.send("exit")
            out["rc"] = target.proc.wait(30)
        except AssertionError as exc:
            out["error"] = str(exc)
            try:
                out["rc"] = target.proc.wait(10)
            except subprocess.TimeoutExpired:  # still running: hung
                target.proc.kill()
                out["rc"] = "hung"
    finally:
        if link is not None:
            link.stop()
        for p in procs:
            if p.poll() is None:
                p.kill()
    out["ok"] = out.get("rc") == 0 and "error" not in out
    return out


def parse_variant(text: str) -> tuple[str, dict]:
    phase, *opts = text.split(":")
    if phase not in ("on", "off", "stay", "none"):
        raise SystemExit(f"detach_stress: unknown phase {phase!r} in {text!r}")
    return phase, {k: json.loads(v) for k, v in (o.split("=", 1) for o in opts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default="on,off,none")
    ap.add_argument("--spin", type=float, default=6.0, help="seconds of eager loop per round")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    variants = [(v, *parse_variant(v)) for v in args.variants.split(",")]
    results = []
    for r in range(args.rounds):  # variants interleaved, so drift hits each alike
        for name, phase, options in variants:
            res = {"variant": name, **one_round(phase, options, args.spin)}
            results.append(res)
            print(
                f"round {r} {name:22s} ok={res['ok']} rc={res.get('rc')} "
                f"{res.get('steps_per_s_after', 0):8.0f} steps/s {res.get('error', '')}",
                flush=True,
            )
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
    print("\n| variant | rounds | target died or hung | steps/s after (median) |")
    print("|---|---|---|---|")
    for name, _, _ in variants:
        rs = [x for x in results if x["variant"] == name]
        rates = [x["steps_per_s_after"] for x in rs if "steps_per_s_after" in x]
        median = f"{statistics.median(rates):,.0f}" if rates else "-"
        print(f"| {name} | {len(rs)} | {sum(not x['ok'] for x in rs)} | {median} |")


if __name__ == "__main__":
    main()
