"""Input preprocessing on the host (numpy) vs on the GPU: a host-compute-bound loop.

Each step takes a raw uint8 image batch (``--batch`` images of 3×256×256, from a pool
made at start), preprocesses it (random crop to 224, flip, scale to [0, 1],
normalise), copies it to the GPU and runs bf16 matmuls of about ``--gpu-ms``. By
default the preprocessing runs in numpy on the main thread, calibrated by repeating the
normalisation until a batch takes about ``--cpu-ms`` of one core: more than the GPU
step, so the GPU idles while the host prepares the next batch (H:APP, numpy frames;
GAR ≈ gpu / cpu). With ``--on-gpu`` the raw batch is copied as is and the same
operations (same repeats) run as torch ops on the GPU: the host only launches, and GAR
rises towards 1.

Prints one JSON line at the end (window, calibration, prediction, steps/s).

Run under gtop, e.g. (from the repository root)::

    gtop record -o preprocess-host.gtop -- python benchmarks/workloads/host_preprocess.py
    gtop record -o preprocess-gpu.gtop -- python benchmarks/workloads/host_preprocess.py --on-gpu
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from _common import calibrated_matmuls, cuda_ms, emit, now_ns

SIDE, CROP = 256, 224
MEAN = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
STD = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]


def on_host(raw: np.ndarray, rng: np.random.Generator, repeats: int) -> torch.Tensor:
    """Crop, flip, scale and normalise a uint8 batch in numpy (normalisation repeated)."""
    y, x = rng.integers(0, SIDE - CROP, 2)
    img = raw[:, :, y : y + CROP, x : x + CROP].astype(np.float32) / 255
    if rng.random() < 0.5:
        img = img[..., ::-1]
    for _ in range(repeats):
        img = (img - MEAN) / STD
        img = img * STD + MEAN
    return torch.from_numpy(np.ascontiguousarray((img - MEAN) / STD))


def on_gpu(raw: torch.Tensor, rng: np.random.Generator, repeats: int) -> torch.Tensor:
    """The same operations as :func:`on_host`, as torch ops on the GPU tensor ``raw``."""
    mean = torch.as_tensor(MEAN, device=raw.device)
    std = torch.as_tensor(STD, device=raw.device)
    y, x = (int(v) for v in rng.integers(0, SIDE - CROP, 2))
    img = raw[:, :, y : y + CROP, x : x + CROP].float() / 255
    if rng.random() < 0.5:
        img = img.flip(-1)
    for _ in range(repeats):
        img = (img - mean) / std
        img = img * std + mean
    return (img - mean) / std


def host_ms(raw: np.ndarray, repeats: int, reps: int = 5) -> float:
    """Median wall time of :func:`on_host` on one batch, in ms."""
    rng = np.random.default_rng(0)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        on_host(raw, rng, repeats)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def calibrate(raw: np.ndarray, target_ms: float) -> tuple[int, float]:
    """Normalisation repeats so one batch takes about ``target_ms`` on the host."""
    base, one = host_ms(raw, 0), host_ms(raw, 1)
    repeats = max(0, round((target_ms - base) / max(one - base, 1e-3)))
    return repeats, host_ms(raw, repeats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--on-gpu", action="store_true", help="preprocess with torch on the GPU")
    ap.add_argument("--batch", type=int, default=16, help="images per batch")
    ap.add_argument("--gpu-ms", type=float, default=10.0, help="model step on the GPU")
    ap.add_argument("--cpu-ms", type=float, default=30.0, help="host preprocessing per batch")
    ap.add_argument("--seconds", type=float, default=6.0, help="measured loop")
    args = ap.parse_args()

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    pool = [rng.integers(0, 256, (args.batch, 3, SIDE, SIDE), dtype=np.uint8) for _ in range(4)]
    work, gpu_ms = calibrated_matmuls(args.gpu_ms)
    repeats, cpu_ms = calibrate(pool[0], args.cpu_ms)
    if args.on_gpu:
        raw0 = torch.from_numpy(pool[0]).cuda()
        prep_gpu_ms = cuda_ms(lambda: on_gpu(raw0, np.random.default_rng(0), repeats))

        def step(i: int) -> None:
            raw = torch.from_numpy(pool[i % len(pool)]).cuda(non_blocking=True)
            on_gpu(raw, rng, repeats)
            work()

    else:
        prep_gpu_ms = 0.0

        def step(i: int) -> None:
            on_host(pool[i % len(pool)], rng, repeats).cuda(non_blocking=True)
            work()

    for i in range(3):  # warm-up
        step(i)
    torch.cuda.synchronize()
    steps = 0
    t0, started = now_ns(), time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        step(steps)
        steps += 1
    torch.cuda.synchronize()
    t1 = now_ns()
    gpu_step = gpu_ms + prep_gpu_ms
    predicted = 1.0 if args.on_gpu else gpu_step / max(gpu_step, cpu_ms)
    emit(
        "preprocess-gpu" if args.on_gpu else "preprocess-host",
        (t0, t1),
        {
            "host_bound": not args.on_gpu and cpu_ms > gpu_step,
            "gar": round(predicted, 4),
            "cause": "H:APP: numpy preprocessing on the main thread"
            if not args.on_gpu
            else "GPU-bound: GAR near 1",
            "fix": "--on-gpu: GAR up, H:APP down",
        },
        steps_per_s=steps / ((t1 - t0) / 1e9),
        gpu_step_ms=gpu_step,
        preprocess_gpu_ms=prep_gpu_ms,
        cpu_batch_ms=cpu_ms,
        normalise_repeats=repeats,
        predicted_gar=predicted,
    )


if __name__ == "__main__":
    main()
