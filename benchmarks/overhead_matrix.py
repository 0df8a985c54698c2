"""What gtop costs real workloads: untraced vs gtop default vs gtop full vs torch.profiler.

    PYTHONPATH=$PWD python3 benchmarks/overhead_matrix.py --workloads graph-decode \\
        [--rounds 5] [--budget 210] --json OUT.json
    python3 benchmarks/overhead_matrix.py --merge A.json B.json ... [--markdown OUT.md]

Each run is a fresh process running the workload to its end, exactly as a user would:
``python3 W.py`` (untraced), ``python3 -m gtop record --agent-mode default|full -o F --
python3 W.py``, or the script under torch.profiler with CPU and CUDA activities
(``workloads/under_torch_profiler.py``). The workload measures its own steady-state rate
(tokens/s, images/s, steps/s, after warm-up, GPU synchronised at both ends). Modes are
interleaved in rounds whose order alternates (A B C D, D C B A, ...), so drift of the
machine hits every mode alike; each mode's rate is the median of its rounds, relative to
the median untraced rate; the spread is (max - min) / median of a mode's rounds.

For gtop modes: gtop's own CPU time (its process's threads; py-spy children not
included) and peak RSS, and what the agent measured it cost the target (the last
``agent_cost`` entity of the recording: records/s, the agent thread's CPU share, its GIL
hold share, CUPTI's buffer-callback share).

Workloads: ``graph-decode`` (batch-1 decode replayed as a CUDA graph: GPU-bound, ~100
kernels per replay), ``eager-decode`` (the same eagerly: launch-bound), ``resnet-loader``
(ResNet-18-shaped training fed by a DataLoader with 8 workers: images/s after the first
batch, and the job's whole wall time), ``gpu-train`` (a GPU-bound transformer training
step), ``compile`` (a ``torch.compile``d model's training steps). Rounds stop early when
the next would not fit in ``--budget`` seconds, so one workload fits one GPU-session step.
``--merge`` joins the partial JSONs into the table for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import measured_run

HERE = Path(__file__).resolve().parent
W = HERE / "workloads"
MODES = (
    "untraced",
    "gtop",
    "gtop-full",
    "torch.profiler",
    "gtop-host-off",
    "gtop-no-agent",
    "gtop-every-kernel",
)
"""The matrix's four, then ablations (``--modes``): gtop without host-thread tracing
(BPF, py-spy), gtop without the agent (no CUPTI): which part a launch-bound loss is; and
gtop tracing every kernel (``--trace-every-kernel``): what kernel sampling saves."""
GTOP_ARGS = {
    "gtop": ["--agent-mode", "default"],
    "gtop-full": ["--agent-mode", "full"],
    "gtop-host-off": ["--agent-mode", "default", "--host-tier", "off"],
    "gtop-no-agent": ["--no-agent"],
    "gtop-every-kernel": ["--agent-mode", "default", "--trace-every-kernel"],
}


@dataclass(frozen=True)
class Workload:
    script: Path
    args: tuple[str, ...]
    rate_key: str
    unit: str
    what: str


WORKLOADS = {
    "graph-decode": Workload(
        W / "decode_loop.py",
        ("--graphs", "--seconds", "4"),
        "tokens_per_s",
        "tok/s",
        "batch-1 decode, CUDA graph replay (GPU-bound)",
    ),
    "eager-decode": Workload(
        W / "decode_loop.py",
        ("--seconds", "4"),
        "tokens_per_s",
        "tok/s",
        "batch-1 eager decode (launch-bound)",
    ),
    "resnet-loader": Workload(
        W / "startup_loader.py",
        ("--batches", "80"),
        "img_per_s",
        "img/s",
        "ResNet-18-shaped training, DataLoader with 8 workers",
    ),
    "gpu-train": Workload(
        W / "train_loop.py",
        (
            "--batch",
            "128",
            "--seq",
            "256",
            "--warmup",
            "5",
            "--warmup-seconds",
            "2",
            "--seconds",
            "4",
        ),
        "steps_per_s",
        "steps/s",
        "GPU-bound transformer training step",
    ),
    "compile": Workload(
        W / "startup_compile.py",
        ("--steps", "400", "--dim", "1024"),
        "steps_per_s",
        "steps/s",
        "torch.compile'd model, training steps",
    ),
}
RUN_TIMEOUT_S = 150


def command(w: Workload, mode: str, out: Path, pin: str | None = None) -> list[str]:
    pinned = ["taskset", "-c", pin] if pin else []  # the target only, never gtop
    target = [*pinned, sys.executable, str(w.script), *w.args]
    if mode == "untraced":
        return target
    if mode == "torch.profiler":
        return [*pinned, sys.executable, str(W / "under_torch_profiler.py"), str(w.script), *w.args]
    gtop = [sys.executable, "-m", "gtop", "record", "--force", *GTOP_ARGS[mode]]
    return [*gtop, "-o", str(out), "--", *target]


def agent_cost(path: Path) -> dict | None:
    """The last ``agent_cost`` entity of a recording (the target's, the largest pid's
    being any worker's: the one with the most records is the training process)."""
    from gtop.recordings.reader import Recording

    try:
        with Recording(path) as rec:
            costs = {e.key: e.value for e in rec.entities("agent_cost")}
    except Exception as exc:  # a damaged recording is reported, not fatal
        return {"error": f"{type(exc).__name__}: {exc}"}
    if not costs:
        return None
    return max(costs.values(), key=lambda v: v.get("records", 0))


def run_one(name: str, mode: str, tmp: Path, pin: str | None = None) -> dict:
    w = WORKLOADS[name]
    out = tmp / f"{name}-{mode}.gtop"
    m = measured_run.run(command(w, mode, out, pin), dict(os.environ), RUN_TIMEOUT_S)
    row = m.row()
    row.update(workload=name, mode=mode, rate=(m.result or {}).get(w.rate_key))
    if mode.startswith("gtop"):
        row["agent_cost"] = agent_cost(out) if out.exists() else None
        out.unlink(missing_ok=True)
    else:
        row["cpu_s"] = row["peak_rss_mb"] = None  # the target's own: not gtop's cost
    if m.stderr_tail:
        print(f"{name}/{mode} rc={m.rc}:\n{m.stderr_tail}", file=sys.stderr)
    return row


def measure(
    names: list[str], modes: list[str], rounds: int, budget_s: float, pin: str | None = None
) -> list[dict]:
    rows: list[dict] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            per_round = None
            for r in range(rounds):
                spent = time.monotonic() - started
                if per_round is not None and spent + per_round > budget_s:
                    print(f"{name}: stopped after {r} rounds (budget {budget_s:.0f} s)")
                    break
                t_round = time.monotonic()
                for mode in modes if r % 2 == 0 else modes[::-1]:
                    row = run_one(name, mode, Path(tmp), pin)
                    row["round"] = r
                    rows.append(row)
                    print(json.dumps(_short(row)), flush=True)
                took = time.monotonic() - t_round
                per_round = took if per_round is None else max(per_round, took)
    return rows


def _short(row: dict) -> dict:
    keep = ("workload", "mode", "round", "rate", "wall_s", "cpu_s", "peak_rss_mb", "rc")
    return {k: row.get(k) for k in keep}


def summarise(rows: list[dict]) -> list[dict]:
    """Per workload and mode: median rate, relative to untraced, spread, gtop's costs."""
    out = []
    for name in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == name]
        base_rates = [r["rate"] for r in mine if r["mode"] == "untraced" and r["rate"]]
        base = median(base_rates) if base_rates else None
        for mode in MODES:
            runs = [r for r in mine if r["mode"] == mode]
            rates = [r["rate"] for r in runs if r["rate"]]
            if not runs:
                continue
            med = median(rates) if rates else None
            costs = [
                r["agent_cost"]
                for r in runs
                if r.get("agent_cost") and "error" not in r["agent_cost"]
            ]
            out.append(
                {
                    "workload": name,
                    "mode": mode,
                    "rounds": len(rates),
                    "failed": len(runs) - len(rates),
                    "rate": med,
                    "rates": rates,
                    "relative": med / base if med and base else None,
                    "spread": (max(rates) - min(rates)) / med if len(rates) > 1 and med else None,
                    "wall_s": median(r["wall_s"] for r in runs),
                    "gtop_cpu_s": _median([r["cpu_s"] for r in runs]),
                    "gtop_rss_mb": _median([r["peak_rss_mb"] for r in runs]),
                    "records_per_s": _median([c.get("records_per_s") for c in costs]),
                    "agent_cpu": _median([c.get("agent_cpu") for c in costs]),
                    "gil": _median([c.get("gil") for c in costs]),
                    "callbacks": _median([c.get("callbacks") for c in costs]),
                }
            )
    return out


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return median(values) if values else None


def markdown(summary: list[dict], machine: dict) -> str:
    def f(v: float | None, fmt: str, unit: str = "") -> str:
        return "-" if v is None else format(v, fmt) + unit

    lines = [
        f"GPU: {machine.get('gpu', '?')}, driver {machine.get('driver', '?')}, "
        f"torch {machine.get('torch', '?')}, Python {machine.get('python', '?')}",
        "",
        "| workload | mode | rate (median) | vs untraced | spread | rounds | wall s "
        "| gtop CPU s | gtop RSS MB | records/s | agent CPU | agent GIL | callbacks |",
        "|" + "---|" * 13,
    ]
    for s in summary:
        w = WORKLOADS[s["workload"]]
        failed = f" ({s['failed']} failed)" if s["failed"] else ""
        lines.append(
            f"| {w.what} | {s['mode']} | {f(s['rate'], '.1f')} {w.unit} | "
            f"{f(s['relative'], '.3f')} | {f(pct(s['spread']), '.1f', '%')} | "
            f"{s['rounds']}{failed} | "
            f"{f(s['wall_s'], '.1f')} | {f(s['gtop_cpu_s'], '.1f')} | "
            f"{f(s['gtop_rss_mb'], '.0f')} | {f(s['records_per_s'], ',.0f')} | "
            f"{f(pct(s['agent_cpu']), '.2f', '%')} | {f(pct(s['gil']), '.2f', '%')} | "
            f"{f(pct(s['callbacks']), '.3f', '%')} |"
        )
    return "\n".join(lines)


def rounds_table(rows: list[dict]) -> str:
    """Every run's rate beside what the agent measured in it: whether a slow round is
    one where gtop took more (GIL, callbacks, agent CPU) or one where the machine was
    slow (untraced rounds moving as much)."""
    lines = [
        "| workload | round | mode | rate | agent GIL | callbacks | agent CPU | records/s |",
        "|" + "---|" * 8,
    ]
    for r in sorted(rows, key=lambda r: (r["workload"], r["round"], MODES.index(r["mode"]))):
        c = r.get("agent_cost") or {}
        lines.append(
            f"| {r['workload']} | {r['round']} | {r['mode']} | "
            + (f"{r['rate']:.1f}" if r["rate"] else "failed")
            + "".join(
                f" | {100 * c[k]:.3f}%" if c.get(k) is not None else " | -"
                for k in ("gil", "callbacks", "agent_cpu")
            )
            + (f" | {c['records_per_s']:,.0f} |" if c.get("records_per_s") else " | - |")
        )
    return "\n".join(lines)


def pct(share: float | None) -> float | None:
    return None if share is None else 100 * share


def machine() -> dict:
    info = {"python": platform.python_version(), "host": platform.node()}
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name()
    except ImportError:
        pass
    try:
        smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        info["driver"] = subprocess.run(smi, capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="graph-decode,eager-decode")
    ap.add_argument("--modes", default=",".join(MODES[:4]), help=f"of {', '.join(MODES)}")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=210.0, help="seconds for all rounds")
    ap.add_argument("--json", type=Path, help="write rows and summary here")
    ap.add_argument("--merge", nargs="+", type=Path, help="partial JSONs to join")
    ap.add_argument("--markdown", type=Path, help="write the table here")
    ap.add_argument(
        "--pin",
        metavar="CPUS",
        help="run each target under taskset -c CPUS (gtop itself unpinned): launch-bound "
        "rates otherwise vary ~35%% between fresh processes",
    )
    args = ap.parse_args()
    if args.merge:
        parts = [json.loads(p.read_text()) for p in args.merge if p.exists()]
        if not parts:
            print("overhead_matrix: no partial results to merge", file=sys.stderr)
            return 1
        rows = [r for p in parts for r in p["rows"]]
        info = parts[0]["machine"] if parts else {}
        commands = [c for p in parts for c in p["command"].split("; ")]
    else:
        names = args.workloads.split(",")
        unknown = [n for n in names if n not in WORKLOADS]
        if unknown:
            ap.error(f"unknown workloads {unknown}: choose from {', '.join(WORKLOADS)}")
        modes = args.modes.split(",")
        if bad := [m for m in modes if m not in MODES]:
            ap.error(f"unknown modes {bad}: choose from {', '.join(MODES)}")
        info = machine()
        rows = measure(names, modes, args.rounds, args.budget, args.pin)
        commands = [" ".join(["python3", *sys.argv])]
    summary = summarise(rows)
    text = markdown(summary, info) + "\n\nCommands:\n" + "\n".join(f"    {c}" for c in commands)
    text += "\n\nEvery run:\n\n" + rounds_table(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.json:
        doc = {"machine": info, "command": "; ".join(commands), "rows": rows, "summary": summary}
        args.json.write_text(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
