"""What `gtop record -- CMD` adds to a short job's wall time, and where gtop spends it.

    PYTHONPATH=$PWD python3 benchmarks/startup_overhead.py [--workload loader|compile]
        [--rounds 3] [--json OUT.json] [--profile OUT.txt] [-- WORKLOAD ARGS...]

Each round runs the workload untraced and under ``python3 -m gtop record -o F -- CMD``
(order alternating between rounds), each from a fresh process, and times the whole
command from outside. The workload prints CLOCK_MONOTONIC times of its first line, its
first trained step and its end, which split gtop's run into phases:

* ``launch``: gtop's start until the target's first line (gtop starting its collectors
  and launching the target);
* ``target``: the target's own first line to its end (what gtop costs it while it runs:
  startup of its worker processes, import of torch, the loop);
* ``tail``: the target's end until gtop has exited (exit detection, the agent's last
  buffers, the recording finalised).

The bound (issue 15): gtop's wall time within +2 s or 5% (the larger) of untraced.
``--variants`` adds runs of gtop with one part left out (``no-agent``: no CUPTI agent in
the target; ``host-off``: no host-thread tracing; ``host-proc``: /proc sampling instead of
BPF; ``no-pyspy``: no Python frames), to find which part costs the time; the bound is
checked for the first variant.
``--profile`` runs gtop once more under ``py-spy record`` (gtop's own threads, 100 Hz)
and prints where gtop's CPU went, by thread and by function (self time), so a regression
can be traced. gtop's CPU time (its own threads: the target and py-spy, its children, are
left out) and peak RSS come from /proc (:mod:`measured_run`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from statistics import median

import measured_run

HERE = Path(__file__).resolve().parent
WORKLOADS = {
    "loader": HERE / "workloads" / "startup_loader.py",
    "compile": HERE / "workloads" / "startup_compile.py",
}
RUN_TIMEOUT_S = 200


def _path_without_pyspy() -> str:
    path = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in path if not Path(d, "py-spy").exists())


VARIANTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "gtop": ([], {}),
    "no-agent": (["--no-agent"], {}),
    "host-off": (["--host-tier", "off"], {}),
    "host-proc": (["--host-tier", "proc"], {}),
    "no-pyspy": ([], {"PATH": _path_without_pyspy()}),
}
"""gtop as users run it, and with one part left out each: which part costs the time."""
PARTS = {
    "no-agent": "the agent",
    "host-off": "host-thread tracing",
    "host-proc": "BPF (against /proc sampling)",
    "no-pyspy": "py-spy",
}


def run_once(cmd: list[str], env: dict[str, str]) -> dict:
    m = measured_run.run(cmd, env, RUN_TIMEOUT_S)
    return {**m.row(), "stderr_tail": m.stderr_tail}


def phases(run: dict) -> dict[str, float]:
    r = run["result"]
    if not r:
        return {}
    return {
        "launch_s": (r["t_start_ns"] - run["t0_ns"]) / 1e9,
        "target_s": (r["t_end_ns"] - r["t_start_ns"]) / 1e9,
        "to_first_step_s": (r["t_first_ns"] - r["t_start_ns"]) / 1e9,
        "tail_s": (run["t1_ns"] - r["t_end_ns"]) / 1e9,
    }


def gtop_cmd(out: Path, target: list[str], mode: str, extra: list[str] | None = None) -> list[str]:
    gtop = [sys.executable, "-m", "gtop", "record", "--force", "--agent-mode", mode]
    return [*gtop, *(extra or []), "-o", str(out), "--", *target]


def profile(target: list[str], env: dict[str, str], out: Path, mode: str) -> dict:
    """One gtop run under ``py-spy record``: gtop's CPU by thread and by function."""
    spy = shutil.which("py-spy")
    if spy is None:
        return {"error": "py-spy not found"}
    raw = out.with_suffix(".folded")
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [spy, "record", "--threads", "-r", "100", "--format", "raw"]  # on-CPU only
        cmd += ["-o", str(raw), "--", *gtop_cmd(Path(tmp, "p.gtop"), target, mode)]
        run = run_once(cmd, env)
    threads: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines() if raw.exists() else ():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        count = int(n)
        total += count
        threads[frames[0]] += count
        functions[frames[-1]] += count
    lines = [f"gtop's CPU ({total} on-CPU samples at 100 Hz), by thread:"]
    lines += [f"  {n / 100:7.2f} s  {name}" for name, n in threads.most_common(12)]
    lines.append("busiest functions (self time):")
    lines += [f"  {n / 100:7.2f} s  {name}" for name, n in functions.most_common(25)]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return {"phases": phases(run), "samples": total, "folded": str(raw)}


def table(rows: list[dict], bound: dict) -> str:
    head = (
        "| run | wall s | launch s | target s | to 1st step s | tail s | gtop CPU s | gtop RSS MB |"
    )
    out = [head, "|" + "---|" * 8]
    for r in rows:
        p = r.get("phases", {})
        out.append(
            f"| {r['mode']} #{r['round']} | {r['wall_s']:.2f} | {p.get('launch_s', 0):.2f} | "
            f"{p.get('target_s', 0):.2f} | {p.get('to_first_step_s', 0):.2f} | "
            f"{p.get('tail_s', 0):.2f} | "
            + (
                f"{r['cpu_s']:.1f} | {r['peak_rss_mb']:.0f} |"
                if r["mode"] != "untraced"
                else "- | - |"
            )
        )
    walls = bound["median_wall_s"]
    medians = ", ".join(f"{k} {v:.2f} s" for k, v in walls.items())
    out.append(
        f"\nmedian wall: {medians}; {bound['variant']} adds {bound['added_s']:.2f} s, "
        f"bound +{bound['allowed_s']:.2f} s: " + ("within" if bound["ok"] else "OVER")
    )
    for name, wall in walls.items():
        if name in PARTS and "gtop" in walls:
            out.append(f"{PARTS[name]} costs {walls['gtop'] - wall:+.2f} s ({name} {wall:.2f} s)")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="loader")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1e9, help="start no round after this (s)")
    ap.add_argument("--agent-mode", default="default")
    ap.add_argument(
        "--variants", default="gtop", help=f"comma list of {', '.join(VARIANTS)} (gtop: as is)"
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument("--profile", type=Path, help="also profile one gtop run; summary here")
    ap.add_argument("args", nargs="*", help="workload arguments (after --)")
    args = ap.parse_args()
    target = [sys.executable, str(WORKLOADS[args.workload]), *args.args]
    env = dict(os.environ)
    variants = args.variants.split(",")
    if unknown := [v for v in variants if v not in VARIANTS]:
        ap.error(f"unknown variants {unknown}")
    rows = []
    started, longest = time.monotonic(), 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            if r and time.monotonic() - started + longest > args.budget:
                print(f"stopped after {r} rounds (budget {args.budget:.0f} s)")
                break
            t_round = time.monotonic()
            modes = ["untraced", *variants]
            for mode in modes if r % 2 == 0 else modes[::-1]:
                if mode == "untraced":
                    cmd, run_env = target, env
                else:
                    extra, changes = VARIANTS[mode]
                    out = Path(tmp, f"{r}.gtop")
                    cmd, run_env = gtop_cmd(out, target, args.agent_mode, extra), {**env, **changes}
                run = run_once(cmd, run_env)
                run.update(mode=mode, round=r, phases=phases(run))
                rows.append(run)
                print(json.dumps({k: v for k, v in run.items() if k != "stderr_tail"}), flush=True)
                if run["stderr_tail"]:
                    print(run["stderr_tail"], file=sys.stderr)
            longest = max(longest, time.monotonic() - t_round)
    walls = {
        m: median(x["wall_s"] for x in rows if x["mode"] == m) for m in ["untraced", *variants]
    }
    first = variants[0]
    allowed = max(2.0, 0.05 * walls["untraced"])
    bound = {
        "variant": first,
        "untraced_s": walls["untraced"],
        "gtop_s": walls[first],
        "added_s": walls[first] - walls["untraced"],
        "allowed_s": allowed,
        "ok": walls[first] - walls["untraced"] <= allowed,
        "median_wall_s": walls,
    }
    print(table(rows, bound))
    prof = profile(target, env, args.profile, args.agent_mode) if args.profile else None
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "workload": args.workload,
                    "command": " ".join(sys.argv),
                    "target": target,
                    "rows": rows,
                    "bound": bound,
                    "profile": prof,
                },
                indent=1,
            )
        )
    return 0 if bound["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
