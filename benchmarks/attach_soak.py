"""Attach/detach soak: many `gtop record --pid P --duration D` at random moments into live
GPU targets, a few at a time; counts what a user would not forgive.

    PYTHONPATH=$PWD python3 benchmarks/attach_soak.py [--attaches 200] [--concurrency 4]
        [--modes decode,loader,triton,cblock] [--target-seconds 24] [--per-target 4]
        [--duration 1] [--budget 480] [--json OUT.json]

Without a GPU: ``--modes alloc,sleep,spin,tick`` (CPU-only targets; no kernel is recorded,
the agent reports ``waiting_cuda``).

Each target (``workloads/soak_target.py``: an ``.item()``-syncing decode, a DataLoader
that forks, Triton compiling, a main thread in one long synchronise) runs for
``--target-seconds`` and is attached ``--per-target`` times at random moments from its
first second (inside ``import torch`` and CUDA's start-up) to its end. Per attach: the
command's wall time and exit status, the recording's span (against ``--duration``),
seconds from the command's start to the agent's first report and to the first kernel
recorded, and the agent's error, if any. Per target: *hung* (not exited 30 s after its
end; killed), *harmed* (a non-zero exit, or its results changed: it checks them itself).
Stops starting targets once ``--budget`` seconds have passed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from gtop.recordings.reader import Recording, RecordingError  # noqa: E402

HANG_GRACE_S = 30.0
SLOW_S = 6.0


@dataclass
class Attach:
    mode: str
    at_s: float  # after the target started
    wall_s: float
    rc: int
    span_s: float | None
    first_kernel_s: float | None  # from the command's start
    agent_s: float | None  # the agent's first report, from the command's start
    agent_error: str | None
    last_line: str
    slow_dump: str  # py-spy dump of gtop when it ran SLOW_S past --duration


@dataclass
class TargetRun:
    mode: str
    rc: int | None
    hung: bool
    output: str
    attaches: list[Attach] = field(default_factory=list)


def record(pid: int, duration: float, out: Path, mode: str, at_s: float) -> Attach:
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "gtop", "record", "--pid", str(pid), "--force"]
    t0_ns = time.monotonic_ns()
    gtop = subprocess.Popen(
        [*cmd, "--duration", str(duration), "-o", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    slow_dump = ""
    try:
        _, err = gtop.communicate(timeout=duration + SLOW_S)
    except subprocess.TimeoutExpired:
        slow_dump = where(gtop.pid)  # what a slow gtop is doing
        try:
            _, err = gtop.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            gtop.kill()
            _, err = gtop.communicate()
    rc = gtop.returncode
    wall = (time.monotonic_ns() - t0_ns) / 1e9
    span = first = agent_error = agent_at = None
    try:
        with Recording(out) as rec:
            lo, hi = rec.time_range()
            span = (hi - lo) / 1e9 if hi > lo else 0.0
            kernels = rec.read("kernel")
            if len(kernels):
                first = (int(kernels["t_ns"].min()) - t0_ns) / 1e9
            agent_error = rec.meta.get("agent_error")
            reports = [e.t_ns for e in rec.entities("agent")]
            if reports:
                agent_at = (min(reports) - t0_ns) / 1e9
    except (RecordingError, OSError, KeyError, ValueError):
        pass
    last = (err.strip().splitlines() or [""])[-1][:300]
    return Attach(mode, at_s, wall, rc, span, first, agent_at, agent_error, last, slow_dump)


def where(pid: int) -> str:
    """``py-spy dump`` of gtop itself: its threads' Python stacks, in short."""
    try:
        res = subprocess.run(["py-spy", "dump", "--pid", str(pid)], capture_output=True,
                             text=True, timeout=20, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"py-spy: {exc}"
    keep = [ln.strip() for ln in res.stdout.splitlines() if "threading.py" not in ln]
    return " | ".join(keep[:40])


def run_target(mode: str, args: argparse.Namespace, folder: Path) -> TargetRun:
    script = HERE / "workloads" / "soak_target.py"
    proc = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", str(script), mode,
         "--seconds", str(args.target_seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    start = time.monotonic()
    latest = args.target_seconds - args.duration
    moments = sorted(random.uniform(0.2, latest) for _ in range(args.per_target))
    run = TargetRun(mode, None, False, "")
    for i, at in enumerate(moments):
        time.sleep(max(0.0, start + at - time.monotonic()))
        if proc.poll() is not None:
            break
        out = folder / f"{proc.pid}-{i}.gtop"
        run.attaches.append(record(proc.pid, args.duration, out, mode, time.monotonic() - start))
        out.unlink(missing_ok=True)
    try:
        output, _ = proc.communicate(
            timeout=max(0, start + args.target_seconds - time.monotonic()) + 60 + HANG_GRACE_S
        )
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        run.hung = True
    run.rc = proc.returncode
    lines = output.strip().splitlines() or [""]
    # a target that died: its last lines (faulthandler's stacks of every thread)
    run.output = lines[-1][:200] if run.rc == 0 else "\n".join(lines[-60:])
    return run


def worker(args: argparse.Namespace, modes: list[str], runs: list[TargetRun], lock: threading.Lock,
           deadline: float, folder: Path) -> None:  # fmt: skip
    while time.monotonic() < deadline:
        with lock:
            if sum(len(r.attaches) for r in runs) >= args.attaches:
                return
            mode = modes[len(runs) % len(modes)]
            runs.append(run := TargetRun(mode, None, False, "(running)"))
        done = run_target(mode, args, folder)
        with lock:
            runs[next(i for i, r in enumerate(runs) if r is run)] = done


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summarise(runs: list[TargetRun], duration: float) -> list[dict]:
    rows = []
    for mode in sorted({r.mode for r in runs}):
        mine = [r for r in runs if r.mode == mode]
        attaches = [a for r in mine for a in r.attaches]
        walls = [a.wall_s for a in attaches]
        spans = [abs(a.span_s - duration) for a in attaches if a.span_s is not None]
        firsts = [a.first_kernel_s for a in attaches if a.first_kernel_s is not None]
        agents = [a.agent_s for a in attaches if a.agent_s is not None]
        rows.append(
            {
                "mode": mode,
                "targets": len(mine),
                "attaches": len(attaches),
                "hung": sum(r.hung for r in mine),
                "harmed": sum((r.rc not in (0, None)) and not r.hung for r in mine),
                "cmd_failed": sum(a.rc != 0 for a in attaches),
                "wall_p50": pct(walls, 0.5),
                "wall_p95": pct(walls, 0.95),
                "wall_max": max(walls, default=None),
                "over_d_plus_2": sum(w > duration + 2 for w in walls),
                "span_err_p50": pct(spans, 0.5),
                "span_err_max": max(spans, default=None),
                "agent_p50": pct(agents, 0.5),
                "with_agent": len(agents),
                "first_kernel_p50": pct(firsts, 0.5),
                "first_kernel_p90": pct(firsts, 0.9),
                "with_kernels": len(firsts),
                "agent_errors": sum(bool(a.agent_error) for a in attaches),
            }
        )
    return rows


def table(rows: list[dict]) -> str:
    def f(v: object) -> str:
        return "-" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)

    head = list(rows[0]) if rows else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(f(r[k]) for k in head) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attaches", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--modes", default="decode,loader,triton,cblock")
    ap.add_argument("--target-seconds", type=float, default=24.0)
    ap.add_argument("--per-target", type=int, default=4)
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--budget", type=float, default=480.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    random.seed(args.seed)
    modes = args.modes.split(",")
    runs: list[TargetRun] = []
    lock = threading.Lock()
    deadline = time.monotonic() + args.budget
    with tempfile.TemporaryDirectory(prefix="gtop-soak-") as tmp:
        threads = [
            threading.Thread(target=worker, args=(args, modes, runs, lock, deadline, Path(tmp)))
            for _ in range(args.concurrency)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    rows = summarise(runs, args.duration)
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.2f}")
    print(table(rows))
    bad = [r for r in runs if r.hung or r.rc not in (0, None)]
    for r in bad:
        print(f"BAD {r.mode}: rc={r.rc} hung={r.hung} last lines:\n{r.output}")
    for r in runs:
        for a in r.attaches:
            if a.rc != 0 or a.agent_error:
                print(f"attach {a.mode} at {a.at_s:.1f}s rc={a.rc}: {a.agent_error or a.last_line}")
            if a.slow_dump:
                print(f"slow {a.mode} at {a.at_s:.1f}s wall {a.wall_s:.1f}s: {a.slow_dump[:1500]}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "runs": [asdict(r) for r in runs]}))


if __name__ == "__main__":
    main()
