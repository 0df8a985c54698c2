"""Record a 2-rank data-parallel job in which one rank sleeps 20 ms per step, and save
what the ranks measured themselves beside it (the truth gtop's straggler finding is
checked against).

    python benchmarks/capture_ddp.py --out DIR [--device cpu|cuda] [--backend auto|gloo|nccl]
        [--steps N] [--split]

One recording: ``gtop record -o DIR/ddp-straggler-TAG.gtop -- torchrun --standalone
--nproc-per-node 2 workloads/ddp_straggler.py`` (TAG: ``cpu`` or ``gpu``). With
``--split``, two recordings instead, as two hosts would make them: each ``gtop record``
launches one node of a ``--nnodes 2`` job (``DIR/ddp-node0-TAG.gtop``,
``DIR/ddp-node1-TAG.gtop``, sidecar ``DIR/ddp-split-TAG.json``), for ``gtop merge``.

The sidecar ``.json`` holds the window (first all-reduce entered to last one left,
CLOCK_MONOTONIC ns), each rank's time inside the all-reduce, and its straggler wait:
over the steps, how long after it entered the all-reduce the last rank entered. ``auto``
backend: NCCL on CUDA, and gloo when NCCL fails (NCCL refuses two ranks on one GPU).
Prints a table: truth beside gtop's ranks analysis of the recording.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workloads" / "ddp_straggler.py"
SLEEP_MS = 20.0
SLOW_RANK = 1
AGENT_WAIT_S = 30.0
"""``--attach`` on a GPU: how long the ranks wait for gtop's agent to trace them."""


def _recorder(recording: Path) -> list[str]:
    return [sys.executable, "-m", "gtop", "record", "--force", "--agent-mode", "full",
            "--interval", "0.25", "-o", str(recording)]  # fmt: skip


def _record_cmd(recording: Path, job: list[str]) -> list[str]:
    return [*_recorder(recording), "--", *job]


def _workload_args(args: argparse.Namespace, backend: str, ranks_dir: Path) -> list[str]:
    return [str(WORKLOAD), "--out", str(ranks_dir), "--device", args.device,
            "--backend", backend, "--steps", str(args.steps), "--sleep-ms", str(SLEEP_MS),
            "--slow-rank", str(SLOW_RANK)]  # fmt: skip


def _run_all(cmds: list[list[str]], timeout: float) -> tuple[bool, str]:
    """Run ``cmds`` at once, each in its own session: whether all exited 0, and the tail
    of their output (on a timeout every session is killed: gtop and its job)."""
    procs = [
        subprocess.Popen(
            c,
            cwd=HERE.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for c in cmds
    ]
    try:
        texts = [p.communicate(timeout=timeout)[0].decode(errors="replace") for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        return False, f"timed out after {timeout} s"
    return not any(p.returncode for p in procs), "\n".join(t[-1500:] for t in texts)


def _jobs(args: argparse.Namespace, backend: str, ranks_dir: Path, attach: bool) -> list[list[str]]:
    """The torchrun command of each node (one, or two with ``--split``)."""
    run = [sys.executable, "-m", "torch.distributed.run"]
    work = _workload_args(args, backend, ranks_dir)
    if attach:
        work += ["--go-file", str(ranks_dir / "go")]
    if not args.split:
        return [[*run, "--standalone", "--nproc-per-node", "2", *work]]
    node = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
            "--master-port", str(args.port)]  # fmt: skip
    return [[*run, *node, "--node-rank", str(n), *work] for n in (0, 1)]


def _outputs(args: argparse.Namespace) -> list[Path]:
    tag = "gpu" if args.device == "cuda" else "cpu"
    if not args.split:
        return [args.out / f"ddp-straggler-{tag}.gtop"]
    return [args.out / f"ddp-node{n}-{tag}.gtop" for n in (0, 1)]


def run_job(args: argparse.Namespace, backend: str, ranks_dir: Path) -> list[Path] | str:
    """Record the job; the recordings, or why it failed (the tail of gtop's output)."""
    outs = _outputs(args)
    if args.attach:
        return _attached(args, backend, ranks_dir, outs)
    cmds = [_record_cmd(o, job) for o, job in zip(outs, _jobs(args, backend, ranks_dir, False))]
    ok, tail = _run_all(cmds, args.timeout)
    # gtop record exits 0 whatever its target did: the ranks' files tell
    if ok and len(list(ranks_dir.glob("rank-*.json"))) == 2:
        return outs
    return tail or "the job ended without the ranks' results"


def _attached(
    args: argparse.Namespace, backend: str, ranks_dir: Path, outs: list[Path]
) -> list[Path] | str:
    """Start the job, and once every rank has warmed up, ``gtop record --pid`` each
    node's torchrun; let the ranks go when every recording holds host data."""
    jobs = _jobs(args, backend, ranks_dir, True)
    logs = [open(ranks_dir / f"node{n}.log", "w") for n in range(len(jobs))]  # noqa: SIM115
    procs = [
        subprocess.Popen(
            j, cwd=HERE.parent, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        for j, log in zip(jobs, logs, strict=True)
    ]
    recorders: list[subprocess.Popen] = []
    try:
        _until(lambda: all((ranks_dir / f"ready-{r}").exists() for r in (0, 1)), procs, args)
        for proc, out in zip(procs, outs, strict=True):
            cmd = [*_recorder(out), "--pid", str(proc.pid)]
            recorders.append(
                subprocess.Popen(
                    cmd,
                    cwd=HERE.parent,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
            )
        _until(lambda: all(_holds(out, "thread_state") for out in outs), recorders, args)
        if args.device == "cuda":  # gtop follows the ranks with its agent (NVML lists them)
            with contextlib.suppress(subprocess.TimeoutExpired):
                _until(lambda: all(_tracing(out) for out in outs), recorders, args, AGENT_WAIT_S)
        (ranks_dir / "go").touch()
        for p in procs + recorders:
            p.wait(timeout=args.timeout)
    except (subprocess.TimeoutExpired, RuntimeError) as exc:
        for p in procs + recorders:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        return f"{exc}: " + " | ".join((ranks_dir / f"node{n}.log").read_text()[-600:]
                                        for n in range(len(jobs)))  # fmt: skip
    finally:
        for log in logs:
            log.close()
    bad = [p.stderr.read().decode(errors="replace")[-600:] for p in recorders if p.returncode]
    if bad or any(p.returncode for p in procs):
        return "job or gtop record failed: " + " | ".join(bad)
    return outs


def _until(
    ready: Callable[[], bool],
    procs: list[subprocess.Popen],
    args: argparse.Namespace,
    timeout_s: float | None = None,
) -> None:
    """Wait for ``ready()`` (``timeout_s``, else ``--timeout``); raise when one of ``procs``
    exits first or on timeout."""
    limit = args.timeout if timeout_s is None else timeout_s
    deadline = time.monotonic() + limit
    while not ready():
        if any(p.poll() is not None for p in procs):
            raise RuntimeError("a process exited before it was ready")
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired("capture_ddp", limit)
        time.sleep(0.05)


def _tracing(path: Path) -> bool:
    """Whether the recording at ``path`` has an agent tracing in each of its ranks."""
    from gtop.recordings.reader import Recording, RecordingError

    try:
        with Recording(path) as rec:
            ranks = {e.key for e in rec.entities("process") if e.value.get("dist")}
            on = {e.key for e in rec.entities("agent") if e.value.get("state") == "tracing"}
    except RecordingError:
        return False
    return bool(ranks) and ranks <= on


def _holds(path: Path, stream: str) -> bool:
    """Whether the recording at ``path`` has committed rows of ``stream`` yet."""
    from gtop.recordings.reader import Recording, RecordingError

    try:
        with Recording(path) as rec:
            return bool(rec.chunks(stream))
    except RecordingError:
        return False


def truth(ranks_dir: Path) -> dict[str, Any]:
    """What the ranks measured: window, time in the all-reduce and straggler wait."""
    ranks = sorted(
        (json.loads(p.read_text()) for p in ranks_dir.glob("rank-*.json")),
        key=lambda r: r["rank"],
    )
    steps = min(len(r["enter_ns"]) for r in ranks)
    last_enter = [max(r["enter_ns"][k] for r in ranks) for k in range(steps)]
    t0 = min(r["enter_ns"][0] for r in ranks)
    t1 = max(r["exit_ns"][steps - 1] for r in ranks)
    out: dict[str, Any] = {}
    for r in ranks:
        enter, leave = r["enter_ns"][:steps], r["exit_ns"][:steps]
        wait = sum(last - e for last, e in zip(last_enter, enter, strict=True))
        inside = sum(b - a for a, b in zip(enter, leave, strict=True))
        out[str(r["rank"])] = {
            "pid": r["pid"],
            "collective_s": inside / 1e9,
            "straggler_wait_s": wait / 1e9,
            "straggler_wait_share": wait / (t1 - t0),
            "enter_ns": enter,
            "exit_ns": leave,
        }
    return {
        "window_ns": [t0, t1],
        "duration_s": (t1 - t0) / 1e9,
        "steps": steps,
        "backend": ranks[0]["backend"],
        "device": ranks[0]["device"],
        "ranks": out,
    }


def _gpu_name() -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        return None


def _measured(recordings: list[Path], window: list[int]) -> dict[str, Any] | None:
    """gtop's ranks analysis of the recording(s) over ``window`` (merged first when two)."""
    from gtop.recordings.ranks_data import analyse_recording

    path = recordings[0]
    if len(recordings) > 1:
        from gtop.recordings.merge import merge

        path = recordings[0].with_name(recordings[0].name.replace("node0", "merged"))
        merge(recordings, path, overwrite=True)
    return analyse_recording(str(path), tuple(window))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--split", action="store_true", help="one recording per node")
    ap.add_argument("--port", type=int, default=29531, help="rendezvous port (--split)")
    ap.add_argument(
        "--attach",
        action="store_true",
        help="record with --pid once the ranks have warmed up (on a GPU, gtop's agent "
        "follows the ranks: NVML lists them); the recordings leave out the seconds of "
        "imports and set-up",
    )
    ap.add_argument("--timeout", type=float, default=180.0)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    backends = [args.backend]
    if args.backend == "auto":
        backends = ["nccl", "gloo"] if args.device == "cuda" else ["gloo"]
    tried: dict[str, str] = {}
    for n, backend in enumerate(backends):
        args.port += n
        with tempfile.TemporaryDirectory(prefix="gtop-ddp-") as tmp:
            got = run_job(args, backend, Path(tmp))
            if isinstance(got, str):
                tried[backend] = got
                print(f"{backend}: failed\n{got}", file=sys.stderr)
                continue
            facts = truth(Path(tmp))
        break
    else:
        return 1
    facts.update(
        {
            "case": "ddp-straggler",
            "sleep_ms": SLEEP_MS,
            "slow_rank": SLOW_RANK,
            "expected": {"straggler": SLOW_RANK},
            "tolerance_pp": 3,
            "failed_backends": {k: v[-1500:] for k, v in tried.items()},
            "gpu": _gpu_name() if args.device == "cuda" else None,
            "torch": __import__("torch").__version__,
            "python": platform.python_version(),
            "command": " ".join([sys.executable, *sys.argv]),
            "nice": os.nice(0),
            "load_avg": os.getloadavg(),
            "recordings": [p.name for p in got],
        }
    )
    tag = "gpu" if args.device == "cuda" else "cpu"
    side = got[0].with_suffix(".json") if len(got) == 1 else args.out / f"ddp-split-{tag}.json"
    side.write_text(json.dumps(facts, indent=1))
    measured = _measured(got, facts["window_ns"])
    print(f"backend {facts['backend']}, {facts['steps']} steps, {facts['duration_s']:.2f} s")
    print("| rank | wait share: truth | gtop | in the collective, s: truth | gtop |")
    print("|---|---|---|---|---|")
    by_rank = {str(r["rank"]): r for r in (measured or {}).get("ranks", [])}
    for rank, t in facts["ranks"].items():
        m = by_rank.get(rank, {})
        share, coll = (m.get(k, float("nan")) for k in ("straggler_wait_share", "collective_s"))
        print(
            f"| {rank} | {t['straggler_wait_share']:.1%} | {share:.1%}"
            f" | {t['collective_s']:.3f} | {coll:.3f} |"
        )
    slowest = (measured or {}).get("slowest_rank")
    print(f"slowest rank: truth {SLOW_RANK}, gtop {slowest}")
    return 0 if slowest == SLOW_RANK else 1


if __name__ == "__main__":
    sys.exit(main())
