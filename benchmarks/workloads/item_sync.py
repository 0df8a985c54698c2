"""A training-style loop that reads its loss with ``.item()`` every step: sync-bound.

Each step launches bf16 matmuls of about ``--gpu-ms`` (calibrated with CUDA events),
then does ``--host-ms`` of Python bookkeeping (metrics, logging: a pure-Python loop).
With ``--item-every 1`` the step first reads the loss with ``.item()``, which waits for
the GPU, so the bookkeeping runs while the GPU is idle: GAR ≈ gpu / (gpu + host), and
each idle gap starts when the synchronising call returns. With ``--item-every 0`` the
loss is summed on the GPU and read once at the end: the host runs ahead, its
bookkeeping overlaps the GPU's work and GAR is near 1 (host < GPU per step).

Prints one JSON line at the end (window, prediction, steps/s).

Run under gtop, e.g. (from the repository root)::

    gtop record -o item-every-step.gtop -- python benchmarks/workloads/item_sync.py
    gtop record -o item-never.gtop -- python benchmarks/workloads/item_sync.py --item-every 0
"""

from __future__ import annotations

import argparse
import time

import torch
from _common import calibrated_matmuls, emit, now_ns


def bookkeeping(seconds: float, log: list[float], loss: float) -> None:
    """What a training loop does on the host per step (running means, formatting a log
    line), stretched to ``seconds`` of one core."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        log.append(loss * 0.99 + len(log) % 7)
        if len(log) > 1000:
            log.clear()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--item-every", type=int, default=1, help="0: never inside the loop")
    ap.add_argument("--gpu-ms", type=float, default=8.0, help="GPU work per step")
    ap.add_argument("--host-ms", type=float, default=4.0, help="host bookkeeping per step")
    ap.add_argument("--seconds", type=float, default=6.0, help="measured loop")
    args = ap.parse_args()

    torch.manual_seed(0)
    work, gpu_ms = calibrated_matmuls(args.gpu_ms)
    x = torch.randn(1024, device="cuda")
    total = torch.zeros((), device="cuda")
    log: list[float] = []
    for _ in range(3):  # warm-up
        work()
        (x * 2).sum().item()
    torch.cuda.synchronize()
    steps, loss = 0, 0.0
    t0, started = now_ns(), time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        work()
        step_loss = (x * (steps % 5)).sum()
        if args.item_every and steps % args.item_every == 0:
            loss = step_loss.item()  # waits for this step's GPU work
        else:
            total += step_loss
        bookkeeping(args.host_ms / 1e3, log, loss)
        steps += 1
    loss = total.item()
    torch.cuda.synchronize()
    t1 = now_ns()
    syncing = args.item_every > 0
    predicted = gpu_ms / (gpu_ms + args.host_ms) if syncing else 1.0
    emit(
        f"item-every-{args.item_every}" if syncing else "item-never",
        (t0, t1),
        {
            "sync_bound": syncing,
            "gar": round(predicted, 4),
            "cause": "host bookkeeping after each .item(): H:APP in gaps that start at a sync"
            if syncing
            else "GPU-bound: GAR near 1",
            "fix": "--item-every 0: GAR up, H:APP down",
        },
        steps_per_s=steps / ((t1 - t0) / 1e9),
        gpu_step_ms=gpu_ms,
        host_ms=args.host_ms,
        item_every=args.item_every,
        predicted_gar=predicted,
        loss=loss,
    )


if __name__ == "__main__":
    main()
