"""A training loop starved by a CPU-bound DataLoader, with its balance set by calibration.

At start the script calibrates both sides so the outcome is known by construction:

* the GPU step: bf16 matmuls of about ``--gpu-ms`` (default 20 ms), timed with CUDA events;
* the CPU transform of one batch (``--batch`` images made, cropped, flipped, normalised
  and box-blurred, all numpy): timed in the main process before any worker starts, the
  number of blur passes per batch is chosen so a batch takes about ``--cpu-ms``
  (default 70 ms) of one core, then the batch time is measured again.

Each step takes the next batch from ``--workers`` loader processes, copies it to the
GPU, runs the matmuls and waits for the result (``.item()``, as a loss print does). The
loader delivers a batch every ``cpu_batch_ms / workers``, so the predicted GPU Active
Ratio is ``gpu_step_ms / max(gpu_step_ms, cpu_batch_ms / workers)``: with 1 worker
≈ 20/70 ≈ 0.3, the GPU idles while the main thread waits on the loader's queue (gtop:
OFF_CPU on the main thread, H:APP in the workers); with 8 workers a batch is ready
every ~9 ms, faster than the 20 ms step, so the loop is GPU-bound (GAR near 1). The
JSON line at the end carries the calibrated numbers and the prediction. About 25 s in
all by default (15 s measured). gtop must follow the loader's child processes.

Run under gtop, e.g. (from the repository root)::

    gtop record -o recordings/loader-1.gtop -- \\
        python benchmarks/workloads/cpu_bound_loader.py --workers 1
    gtop record -o recordings/loader-8.gtop -- \\
        python benchmarks/workloads/cpu_bound_loader.py --workers 8
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from _common import calibrated_matmuls, emit, now_ns
from torch.utils.data import DataLoader, Dataset

MEAN = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
STD = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]
SIDE = 224


def box_blur(img: np.ndarray, radius: int = 2) -> np.ndarray:
    """A separable box blur by running sums along the last two axes."""
    for axis in (1, 2):
        c = np.cumsum(img, axis=axis)
        c = np.concatenate((np.zeros_like(c.take([0], axis=axis)), c), axis=axis)
        n = img.shape[axis]
        hi = np.minimum(np.arange(n) + radius + 1, n)
        lo = np.maximum(np.arange(n) - radius, 0)
        img = (c.take(hi, axis=axis) - c.take(lo, axis=axis)) / (hi - lo).reshape(
            [-1 if a == axis else 1 for a in range(3)]
        )
    return img.astype(np.float32)


class SyntheticBatches(Dataset):
    """Item ``i`` is a whole batch: ``batch`` images with ``passes`` blur passes spread
    over them (image ``j`` gets ``passes // batch`` passes, one more for ``j <
    passes % batch``), so the CPU cost per batch moves in steps of one image pass."""

    def __init__(self, batch: int, passes: int) -> None:
        self.batch, self.passes = batch, passes

    def __len__(self) -> int:
        return 10**6

    def __getitem__(self, i: int) -> torch.Tensor:
        rng = np.random.default_rng(i)
        out = np.empty((self.batch, 3, SIDE, SIDE), np.float32)
        for j in range(self.batch):
            img = rng.integers(0, 256, (3, SIDE + 32, SIDE + 32), dtype=np.uint8)
            y, x = rng.integers(0, 32, 2)
            img = img[:, y : y + SIDE, x : x + SIDE].astype(np.float32) / 255
            if rng.random() < 0.5:
                img = img[:, :, ::-1]
            for _ in range(self.passes // self.batch + (j < self.passes % self.batch)):
                img = box_blur(img)
            out[j] = (img - MEAN) / STD
        return torch.from_numpy(out)


def batch_ms(batch: int, passes: int, reps: int) -> float:
    """Median wall time of making one batch in this process, in ms."""
    data = SyntheticBatches(batch, passes)
    times = []
    for i in range(reps):
        t = time.perf_counter()
        data[i]
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def calibrate_cpu(batch: int, target_ms: float) -> tuple[int, float]:
    """Blur passes per batch so one batch takes about ``target_ms`` of one core, and the
    measured batch time with them: the cost of a pass is measured on whole batches (one
    pass per image, then refined once at the first estimate)."""
    base = batch_ms(batch, 0, 3)
    passes, took = batch, batch_ms(batch, batch, 3)
    for _ in range(2):
        per_pass = max(took - base, 1e-3) / max(passes, 1)
        passes = max(0, round((target_ms - base) / per_pass))
        took = batch_ms(batch, passes, 3)
    return passes, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=8, help="images per batch")
    ap.add_argument("--gpu-ms", type=float, default=20.0, help="GPU step target")
    ap.add_argument("--cpu-ms", type=float, default=70.0, help="CPU time per batch target")
    ap.add_argument("--seconds", type=float, default=15.0, help="measured loop")
    args = ap.parse_args()
    if args.workers < 1:
        ap.error("--workers must be at least 1 (the loader runs in worker processes)")

    torch.manual_seed(0)
    work, gpu_ms = calibrated_matmuls(args.gpu_ms)
    passes, cpu_ms = calibrate_cpu(args.batch, args.cpu_ms)
    supply_ms = cpu_ms / args.workers
    predicted_gar = gpu_ms / max(gpu_ms, supply_ms)

    loader = DataLoader(
        SyntheticBatches(args.batch, passes),
        batch_size=None,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=2,
    )
    it = iter(loader)
    for _ in range(args.workers):  # every worker started and warm
        next(it)
    torch.cuda.synchronize()
    steps, checksum = 0, 0.0
    t0, started = now_ns(), time.perf_counter()
    for x in it:
        x = x.cuda(non_blocking=True)
        work()
        checksum += x.mean().item()  # waits for the step, as a loss print does
        steps += 1
        if time.perf_counter() - started >= args.seconds:
            break
    torch.cuda.synchronize()
    t1 = now_ns()
    loader_bound = supply_ms > gpu_ms
    emit(
        f"loader-{args.workers}",
        (t0, t1),
        {
            "loader_bound": loader_bound,
            "gar": round(predicted_gar, 4),
            "cause": "main thread OFF_CPU waiting on the loader; workers H:APP"
            if loader_bound
            else "GPU-bound: GAR near 1",
            "fix": "more --workers: GAR up to ~1, main-thread OFF_CPU down",
        },
        steps_per_s=steps / ((t1 - t0) / 1e9),
        predicted_steps_per_s=1e3 / max(gpu_ms, supply_ms),
        workers=args.workers,
        batch=args.batch,
        gpu_step_ms=gpu_ms,
        cpu_batch_ms=cpu_ms,
        blur_passes_per_batch=passes,
        loader_supply_ms=supply_ms,
        predicted_gar=predicted_gar,
        checksum=checksum,
    )


if __name__ == "__main__":
    main()
