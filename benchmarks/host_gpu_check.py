"""GPU-machine check of the host side: a slow-DataLoader torch loop seen from outside.

    python benchmarks/host_gpu_check.py OUT_DIR [--seconds 20] [--tier auto]

Runs ``workloads/slow_loader_train.py``, attaches the host-thread collector to it (its
DataLoader workers are child processes, followed automatically), and checks that the
flamegraph shows (1) the workers' file reads and CPU transforms and (2) the main thread's
waits on the loader queue and on GPU synchronisation, with Python frames (the GPU
waits need a step whose GPU work outlasts the launches: the workload's ``--gpu-ms``). Writes
``OUT_DIR/host_gpu_check.json`` (checks, tier, status, per-thread report),
``OUT_DIR/slow_loader.npz`` (the capture, see host_capture.py) and
``OUT_DIR/slow_loader.folded`` (flamegraph.pl text). Exits 1 when a check fails.
Needs root (or CAP_BPF+CAP_PERFMON+CAP_SYS_PTRACE) and py-spy in PATH.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from host_capture import capture, save

from gtop.analysis.host.thread_time import carry_python, fold, folded_text, threads_report

WORKLOAD = Path(__file__).parent / "workloads" / "slow_loader_train.py"


def _has(folded: dict, root: tuple[str, ...], *needles: str) -> float:
    """Seconds of stacks under ``root`` having a frame that contains each needle.

    A needle may be ``a&b``: one frame must contain both parts.
    """

    def hit(frames: tuple[str, ...], needle: str) -> bool:
        return any(all(p in f for p in needle.split("&")) for f in frames)

    return sum(
        w for k, w in folded.items() if k[: len(root)] == root and all(hit(k, n) for n in needles)
    )


GPU_SYNC_CALLS = (
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpyAsync",
    "cudaMemcpy",
)
"""Frames of the CUDA runtime and driver calls a thread waits on the GPU in."""


def loader_checks(folded: dict, main_root: tuple[str, ...]) -> dict[str, float]:
    """Seconds found for each thing the flamegraph of the slow-loader loop must show."""
    return {
        "workers_read_files": _has(folded, ("worker",), "read_sample"),
        "workers_cpu_transform": _has(folded, ("worker",), "on-CPU", "cpu_transform"),
        # blocked in a file read: a filesystem's read path under vfs_read
        "workers_io_kernel_frames": _has(
            folded, ("worker",), "off-CPU", "vfs_read", "file_read_iter"
        )
        + _has(folded, ("worker",), "off-CPU", "vfs_read", "filemap_read"),
        "main_waits_on_loader_queue": _has(folded, main_root, "off-CPU", "_get_data"),
        # torch.cuda.synchronize() (Python frame), the driver's sync (native leaf), or time
        # blocked inside a probed libcuda call (BPF uprobes: reason gpu_wait)
        "main_waits_on_gpu_sync": _has(folded, main_root, "synchronize&cuda")
        + _has(folded, (*main_root, "off-CPU", "gpu_wait"))
        + sum(_has(folded, main_root, name) for name in GPU_SYNC_CALLS),
        # the same waits with the Python frames of the call that waited: time inside a
        # probed GPU call (on or off CPU) under train_step, or torch.cuda.synchronize
        "main_gpu_sync_python_frames": _has(
            folded, (*main_root, "off-CPU", "gpu_wait"), "train_step"
        )
        + _has(folded, (*main_root, "on-CPU", "gpu_wait"), "train_step")
        + _has(folded, main_root, "synchronize&cuda", "train_step"),
    }


def folded_from_recording(path: str) -> tuple[dict, tuple[str, ...]]:
    """The same folded stacks, from a ``.gtop`` recording of the slow-loader loop (made
    with ``gtop record -- python workloads/slow_loader_train.py``), and the main root."""
    from gtop.recordings.reader import Recording

    with Recording(path) as rec:
        intervals, samples = rec.read("thread_state"), rec.read("cpu_sample")
        stacks = {int(e.key): e.value for e in rec.entities("stack")}
        threads = {int(e.key): e.value for e in rec.entities("thread")}
        target = int(rec.meta["target"]["pid"])
    prefix = {
        tid: ("main" if v.get("pid") == target else "worker", f"{v.get('name', '')} {tid}")
        for tid, v in threads.items()
    }
    # recorded before the collector carried Python frames across waits: carry them here
    intervals, stacks = carry_python(intervals, stacks)
    folded = fold(intervals, samples, stacks, prefix=prefix)
    return folded, prefix[target]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--tier", default="auto")
    ap.add_argument("--device", default="cuda", help="cpu: dry run (the GPU-sync check fails)")
    ap.add_argument("--gpu-ms", type=float, default=30.0, help="the workload's GPU work per step")
    args = ap.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # sample files go under OUT_DIR (a disk, unlike a tmpfs /tmp), removed even on failure
    data = tempfile.TemporaryDirectory(dir=out)
    cmd = [sys.executable, str(WORKLOAD), "--seconds", str(args.seconds + 30),
           "--device", args.device, "--data-dir", data.name,
           "--gpu-ms", str(args.gpu_ms)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, start_new_session=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 90)
        line = proc.stdout.readline().decode() if ready else ""
        if not line.startswith("READY "):
            sys.exit(f"workload did not start: {line!r}")
        info = json.loads(line[6:])
        cap = capture(info["pid"], args.seconds, args.tier, py_rate_hz=5)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        data.cleanup()
    meta = cap["meta"]
    stacks = {int(k): v for k, v in meta["stacks"].items()}
    names = {int(k): v for k, v in meta["names"].items()}
    pids = {int(k): v for k, v in meta["pids"].items()}
    role = {tid: ("main" if pid == info["pid"] else "worker") for tid, pid in pids.items()}
    prefix = {tid: (role.get(tid, "?"), f"{names.get(tid, '')} {tid}") for tid in names}
    folded = fold(cap["intervals"], cap["samples"], stacks, prefix=prefix)
    main_root = ("main", f"{names.get(info['pid'], '')} {info['pid']}")
    checks = loader_checks(folded, main_root)
    passed = {k: v > 0 for k, v in checks.items()}
    save(str(out / "slow_loader.npz"), cap)
    (out / "slow_loader.folded").write_text(folded_text(folded))
    report = threads_report(cap["intervals"], cap["samples"], stacks, names, top=3)
    result = {
        "command": cmd,
        "tier": meta["tier"],
        "status": meta["status"],
        "checks_seconds": checks,
        "passed": passed,
        "threads": report,
    }
    (out / "host_gpu_check.json").write_text(json.dumps(result, indent=1, default=str))
    for k, v in checks.items():
        print(f"{'ok  ' if passed[k] else 'FAIL'} {k}: {v:.3f}s")
    print(f"tier {meta['tier']}, wrote {out}")
    sys.exit(0 if all(passed.values()) else 1)


if __name__ == "__main__":
    main()
