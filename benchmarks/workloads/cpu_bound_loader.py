"""A training loop starved by a CPU-bound DataLoader.

Images are made and transformed on the CPU (random crop, flip, normalise, and
``--blur-passes`` separable box blurs, all numpy) by ``--workers`` loader processes; the
GPU step is a small CNN. With few workers the main thread waits on the loader's queue
(gtop: OFF_CPU on the main thread, H:APP in the workers, low GAR); with more workers
(``--workers 8``) GAR must rise and the loader wait must shrink. Prints one JSON line at
the end. gtop must follow the loader's child processes.

Run under gtop, e.g. (from the repository root)::

    gtop record -o recordings/loader-1.gtop -- \\
        python benchmarks/workloads/cpu_bound_loader.py --workers 1
    gtop record -o recordings/loader-8.gtop -- \\
        python benchmarks/workloads/cpu_bound_loader.py --workers 8
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from _common import emit, now_ns
from torch import nn
from torch.utils.data import DataLoader, Dataset

MEAN = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
STD = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]


def box_blur(img: np.ndarray, radius: int) -> np.ndarray:
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


class SyntheticImages(Dataset):
    def __init__(self, size: int, blur_passes: int) -> None:
        self.size, self.blur_passes = size, blur_passes

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        rng = np.random.default_rng(i)
        img = rng.integers(0, 256, (3, 256, 256), dtype=np.uint8)
        y, x = rng.integers(0, 32, 2)
        img = img[:, y : y + 224, x : x + 224].astype(np.float32) / 255
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        for _ in range(self.blur_passes):
            img = box_blur(img, 2)
        return torch.from_numpy(np.ascontiguousarray((img - MEAN) / STD)), int(i % 10)


def model() -> nn.Module:
    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    return nn.Sequential(
        nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.ReLU(), nn.MaxPool2d(2),
        block(64, 128), nn.MaxPool2d(2), block(128, 256), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(256, 10),
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--blur-passes", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()

    torch.manual_seed(0)
    net = model().cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(
        SyntheticImages(10**6, args.blur_passes),
        batch_size=args.batch,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=True,
        persistent_workers=args.workers > 0,
        prefetch_factor=2 if args.workers > 0 else None,
    )
    batches = 0
    it = iter(loader)
    next(it)  # workers started and warm
    torch.cuda.synchronize()
    t0, started = now_ns(), time.perf_counter()
    for x, y in it:
        x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
        y = y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        batches += 1
        if time.perf_counter() - started >= args.seconds:
            break
    torch.cuda.synchronize()
    t1 = now_ns()
    emit(
        f"loader-{args.workers}",
        (t0, t1),
        {
            "loader_bound": args.workers < 4,
            "cause": "main thread OFF_CPU waiting on the loader; workers H:APP",
            "fix": "more --workers: GAR up, main-thread OFF_CPU down",
        },
        batches_per_s=batches / ((t1 - t0) / 1e9),
        workers=args.workers,
        batch=args.batch,
    )


if __name__ == "__main__":
    main()
