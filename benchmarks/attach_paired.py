"""What gtop costs one launch-bound process, paired in time: attach, detach, compare.

    PYTHONPATH=$PWD python3 benchmarks/attach_paired.py [--rounds 6] [--traced 9]
        [--gap 6] [--variants default,no-agent,host-off] [--graphs] [--json OUT.json]

Fresh processes of the eager decode differ by ~35% on the GPU machine, and even one
process jumps between rate regimes for seconds at a time, so run-against-run ratios
cannot resolve 5%. Here one process (``workloads/decode_windows.py``) decodes for the
whole benchmark (``--graphs``: replaying its step as a CUDA Graph) and reports its rate
per window; gtop attaches to it (``gtop record
--pid P --duration S``: the agent injected, CUPTI, host-thread tracing, NVML, exactly a
user's attach), records, detaches; the next variant attaches after a gap, and so on in
rounds whose order alternates. Each attach's rate (median of the windows from
``--settle`` seconds after gtop started until it stopped recording) is divided by the
median of the untraced windows of the gaps just before and after it ("paired"): both
sides see the same regime of the machine. A variant's result is the median of its
paired ratios. The untraced windows of the first gap (before any attach) against those of
the last gap show whether a detach leaves a cost behind.

Variants: ``default`` (``--agent-mode default``), ``no-agent`` (no CUPTI: host tracing and
NVML), ``host-off`` (the agent, no host-thread tracing), ``every-kernel`` (default without
kernel sampling: every launch traced), ``graph-nodes``, ``full``, ``nvml-only`` (neither
the agent nor host-thread tracing: what NVML polling and gtop's presence cost),
``floor-0.2`` (default with kernel sampling's floor at 20%, as before).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
VARIANTS = {
    "default": ["--agent-mode", "default"],
    "graph-nodes": ["--agent-mode", "graph-nodes"],
    "full": ["--agent-mode", "full"],
    "no-agent": ["--no-agent"],
    "host-off": ["--agent-mode", "default", "--host-tier", "off"],
    "every-kernel": ["--agent-mode", "default", "--trace-every-kernel"],
    "nvml-only": ["--no-agent", "--host-tier", "off"],
    "floor-0.2": ["--agent-mode", "default"],
}
VARIANT_ENV = {"floor-0.2": {"GTOP_AGENT_OPTIONS": '{"min_duty": 0.2}'}}
"""Agent options a variant sets (``floor-0.2``: kernel sampling traces at least 20% of
the time, the floor before 2026-11-29, instead of 10%)."""


@dataclass
class Attach:
    """One attach of ``variant``: gtop ran from ``t0`` to ``t1`` (monotonic ns)."""

    variant: str
    t0: int
    t1: int
    rc: int
    stderr: str = ""
    traced: list[float] = field(default_factory=list)
    ratio: float | None = None


class Windows:
    """The workload's window lines, read on a thread as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.rows: list[dict[str, float]] = []
        self._proc = proc
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                self.rows.append(json.loads(line))
            except ValueError:
                print(f"workload: {line.rstrip()}", file=sys.stderr)

    def between(self, lo: int, hi: int) -> list[float]:
        """Rates of the windows wholly inside ``[lo, hi]``."""
        return [r["tok_s"] for r in self.rows if r["t0"] >= lo and r["t1"] <= hi]


def attach(pid: int, variant: str, seconds: float, out: Path) -> Attach:
    cmd = [sys.executable, "-m", "gtop", "record", "--pid", str(pid), "--force"]
    cmd += ["--duration", str(seconds), "-o", str(out), *VARIANTS[variant]]
    t0 = time.monotonic_ns()
    env = {**os.environ, **VARIANT_ENV.get(variant, {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, env=env)
    t1 = time.monotonic_ns()
    if proc.returncode:
        print(f"{variant}: gtop exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return Attach(variant, t0, t1, proc.returncode, proc.stderr.strip()[-2000:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--traced", type=float, default=9.0, help="seconds gtop records")
    ap.add_argument("--gap", type=float, default=6.0, help="untraced seconds between")
    ap.add_argument("--settle", type=float, default=3.0, help="s after gtop starts, skipped")
    ap.add_argument("--margin", type=float, default=1.5, help="s after gtop exits, skipped")
    ap.add_argument("--variants", default="default,no-agent,host-off")
    ap.add_argument("--graphs", action="store_true", help="the decode as a CUDA Graph replay")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    per_round = len(variants) * (args.traced + args.gap + 4)
    total = args.rounds * per_round + args.gap + 60
    workload = [sys.executable, "-X", "faulthandler", str(HERE / "workloads" / "decode_windows.py")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE / "workloads"), os.environ.get("PYTHONPATH", "")]),
    }
    errors = tempfile.TemporaryFile()  # noqa: SIM115 (read at the end)
    proc = subprocess.Popen(
        [*workload, "--seconds", str(total), *(["--graphs"] if args.graphs else [])],
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
        env=env,
    )
    windows = Windows(proc)
    while not windows.rows and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(args.gap)  # warm: the first gap's windows are the clean baseline
    attaches: list[Attach] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = variants if r % 2 == 0 else variants[::-1]
            for variant in order:
                if proc.poll() is not None:
                    break
                attaches.append(attach(proc.pid, variant, args.traced, Path(tmp) / "a.gtop"))
                time.sleep(args.gap)
                print(f"round {r} {variant}: {len(windows.rows)} windows so far", flush=True)
    early = proc.poll()
    if early is not None:  # the workload was to outlive every attach: gtop harmed it?
        errors.seek(0)
        tail = errors.read().decode(errors="replace")[-3000:]
        print(f"HARMED: the workload exited early with status {early}; its stderr:\n{tail}")
    proc.terminate()
    proc.wait(timeout=30)
    return report(windows, attaches, args) or int(early is not None)


def report(windows: Windows, attaches: list[Attach], args: argparse.Namespace) -> int:
    margin, settle = int(args.margin * 1e9), int(args.settle * 1e9)
    start = int(windows.rows[0]["t1"]) if windows.rows else 0
    bounds = [start, *[x for a in attaches for x in (a.t0, a.t1)], 2**63 - 1]
    gaps = [
        windows.between(bounds[i] + (margin if i else 0), bounds[i + 1])
        for i in range(0, len(bounds), 2)
    ]
    for i, a in enumerate(attaches):
        a.traced = windows.between(a.t0 + settle, a.t1 - margin)
        around = [median(g) for g in (gaps[i], gaps[i + 1]) if g]
        if a.traced and around and a.rc == 0:
            a.ratio = median(a.traced) / (sum(around) / len(around))
    rows = []
    print("| variant | paired ratio (median) | ratios | traced windows | tok/s traced |")
    print("|---|---|---|---|---|")
    for variant in dict.fromkeys(a.variant for a in attaches):
        mine = [a for a in attaches if a.variant == variant]
        ratios = [a.ratio for a in mine if a.ratio is not None]
        traced = [x for a in mine for x in a.traced]
        row = {
            "variant": variant,
            "paired": median(ratios) if ratios else None,
            "ratios": ratios,
            "windows": len(traced),
            "tok_s": median(traced) if traced else None,
        }
        rows.append(row)
        shown = ", ".join(f"{x:.3f}" for x in ratios)
        paired = f"**{row['paired']:.3f}**" if ratios else "-"
        tok = f"{row['tok_s']:.1f}" if traced else "-"
        print(f"| {variant} | {paired} | {shown} | {len(traced)} | {tok} |")
    untraced = [x for g in gaps for x in g]
    first, last = gaps[0], gaps[-1]
    residue = median(last) / median(first) if first and last else None
    print(
        f"untraced windows {len(untraced)}, tok/s median {median(untraced):.1f}"
        if untraced
        else "no untraced windows"
    )
    if residue is not None:
        print(f"last gap vs first gap (before any attach): {residue:.3f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "variants": rows,
                    "untraced_median": median(untraced) if untraced else None,
                    "residue": residue,
                    "windows": windows.rows,
                    "attaches": [a.__dict__ for a in attaches],
                },
                indent=1,
            )
        )
    return 0 if all(r["paired"] is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
