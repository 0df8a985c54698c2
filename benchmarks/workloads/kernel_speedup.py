"""One model, GPU-bound or host-bound, with its matmuls in FP32 or TF32: does a faster
kernel buy anything? (issue 25: the what-if's causal point.)

Each step launches FP32 matmuls of 4096×4096 (as many as take about ``--gpu-ms`` in
FP32) and an elementwise tail of about a quarter of that (not touched by TF32), then
does ``--host-ms`` of Python bookkeeping; every ``--sync-every`` steps it synchronises (as a loss print every few steps does), so the host runs at most that far
ahead of the GPU and never fills CUDA's launch queue (a launch that blocks on a full
queue would look like host work):

* ``--bound gpu`` (host 1 ms per step): the GPU is the bottleneck, and TF32 (faster
  matmul kernels, the same work) speeds the step up by the matmuls' share (Amdahl);
* ``--bound host`` (host 3× ``--gpu-ms``, over twice the GPU step): the host is the
  bottleneck, and TF32 buys nothing, however much faster the kernels get.

The number of matmuls per step is calibrated in FP32 and kept with ``--tf32 on``, so
the two runs do the same work. ``--measure-kernels`` prints instead the matmul's time
in FP32 and in TF32 (CUDA events, no host work): the "N× faster" a what-if asks about.

Prints one JSON line at the end (window, calibration, steps/s).

    gtop record -o kernel-gpu-fp32.gtop -- python benchmarks/workloads/kernel_speedup.py --bound gpu --tf32 off
    gtop record -o kernel-gpu-tf32.gtop -- python benchmarks/workloads/kernel_speedup.py --bound gpu --tf32 on
    python benchmarks/workloads/kernel_speedup.py --measure-kernels
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import time

import torch
from _common import cuda_ms, emit, now_ns

SIDE = 4096
"""The matrices' side: large enough for TF32's tensor cores to matter."""


def matmul_ms(tf32: bool) -> float:
    """One SIDE×SIDE FP32 matmul's GPU time with TF32 ``tf32``, in ms."""
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(SIDE, SIDE, device="cuda")
    b = torch.randn(SIDE, SIDE, device="cuda")
    out = torch.empty(SIDE, SIDE, device="cuda")
    return cuda_ms(lambda: torch.mm(a, b, out=out), reps=10)


def bookkeeping(seconds: float, log: list[float]) -> None:
    """Host work of a training step (running means, a log line), ``seconds`` of a core."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        log.append(len(log) % 7 * 0.5)
        if len(log) > 1000:
            log.clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bound", choices=("gpu", "host"), default="gpu")
    ap.add_argument("--tf32", choices=("on", "off"), default="off")
    ap.add_argument("--gpu-ms", type=float, default=8.0, help="FP32 matmuls per step, ms")
    ap.add_argument("--host-ms", type=float, help="host work per step (default by --bound)")
    ap.add_argument("--seconds", type=float, default=4.0, help="measured loop")
    ap.add_argument("--sync-every", type=int, default=5, help="steps between synchronises")
    ap.add_argument("--measure-kernels", action="store_true", help="print matmul times only")
    args = ap.parse_args()
    torch.manual_seed(0)
    fp32 = matmul_ms(False)
    if args.measure_kernels:
        tf32 = matmul_ms(True)
        print(json.dumps({"fp32_ms": fp32, "tf32_ms": tf32, "tf32_over_fp32": tf32 / fp32}))
        return
    matmuls = max(1, round(args.gpu_ms / fp32))
    host_ms = args.host_ms
    if host_ms is None:
        host_ms = 1.0 if args.bound == "gpu" else 3 * args.gpu_ms
    torch.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
    a = torch.randn(SIDE, SIDE, device="cuda")
    b = torch.randn(SIDE, SIDE, device="cuda")
    out = torch.empty(SIDE, SIDE, device="cuda")
    tail = torch.randn(SIDE * SIDE, device="cuda")
    tail_reps = max(1, round(args.gpu_ms / 4 / cuda_ms(lambda: torch.relu_(tail.mul_(0.5)))))
    total = torch.zeros((), device="cuda")

    def step() -> None:
        for _ in range(matmuls):
            torch.mm(a, b, out=out)
        for _ in range(tail_reps):
            torch.relu_(tail.mul_(0.5))
        total.add_(out[0, 0])

    gpu_ms = cuda_ms(step)
    log: list[float] = []
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    steps = 0
    t0, started = now_ns(), time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        step()
        bookkeeping(host_ms / 1e3, log)
        steps += 1
        if args.sync_every > 0 and steps % args.sync_every == 0:
            torch.cuda.synchronize()
    loss = total.item()
    torch.cuda.synchronize()
    t1 = now_ns()
    emit(
        f"kernel-{args.bound}-{'tf32' if args.tf32 == 'on' else 'fp32'}",
        (t0, t1),
        {
            "bound": args.bound,
            "cause": "GPU-bound: G:COMP" if args.bound == "gpu" else "host-bound: H:APP",
            "fix": "--tf32 on: faster matmul kernels; buys their share only when GPU-bound",
        },
        steps_per_s=steps / ((t1 - t0) / 1e9),
        gpu_step_ms=gpu_ms,
        host_ms=host_ms,
        matmuls=matmuls,
        tail_reps=tail_reps,
        tf32=args.tf32 == "on",
        sync_every=args.sync_every,
        fp32_matmul_ms=fp32,
        loss=loss,
    )


if __name__ == "__main__":
    main()
