"""A short ResNet-style training job fed by a DataLoader with 8 worker processes.

Measures what a profiler adds to a normal job's start and end, not its steady state:
the job imports torch, builds a small residual conv net, starts ``--workers`` loader
processes (forked, as DataLoader does by default on Linux), trains ``--batches`` batches
of synthetic 64x64 images (each sample built and augmented on the CPU in a worker) and
exits. Prints one JSON line: CLOCK_MONOTONIC times of the script's first line, the first
trained batch and the end, and images/s after the first batch.

    python benchmarks/workloads/startup_loader.py [--workers 8] [--batches 80] [--device cuda]
"""

from __future__ import annotations

import time

T_START_NS = time.monotonic_ns()  # before torch is imported: its import is part of startup

import argparse  # noqa: E402
import json  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


class Synthetic(Dataset):
    """Deterministic images built and augmented on the CPU (a stand-in for decoding)."""

    def __init__(self, n: int, size: int) -> None:
        self.n, self.size = n, size

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(i)
        x = torch.rand(3, self.size + 8, self.size + 8, generator=g)
        dy, dx = (int(v) for v in torch.randint(0, 9, (2,), generator=g))
        x = x[:, dy : dy + self.size, dx : dx + self.size]  # random crop
        if i % 2:
            x = x.flip(-1)
        x = (x - x.mean((1, 2), keepdim=True)) / (x.std((1, 2), keepdim=True) + 1e-5)
        return x.contiguous(), torch.tensor(i % 10)


def block(c_in: int, c_out: int, stride: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False),
        nn.BatchNorm2d(c_out),
    )


class Residual(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = block(c_in, c_out, stride)
        self.skip = (
            nn.Identity()
            if c_in == c_out and stride == 1
            else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + self.skip(x))


def resnet(width: int = 64, classes: int = 10) -> nn.Module:
    """A ResNet-18-shaped net (four stages of two residual blocks) for small images."""
    layers: list[nn.Module] = [
        nn.Conv2d(3, width, 3, 1, 1, bias=False),
        nn.BatchNorm2d(width),
        nn.ReLU(),
    ]
    c = width
    for c_out, stride in ((width, 1), (2 * width, 2), (4 * width, 2), (8 * width, 2)):
        layers += [Residual(c, c_out, stride), Residual(c_out, c_out, 1)]
        c = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batches", type=int, default=80)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--width", type=int, default=64, help="channels of the first stage")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = resnet(args.width).to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = Synthetic(args.batches * args.batch, args.size)
    loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers, shuffle=False)
    first = None
    for x, y in loader:
        x, y = x.to(args.device, non_blocking=True), y.to(args.device, non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if first is None:
            loss.item()  # synchronises: the first batch has trained
            first = time.monotonic_ns()
    loss.item()
    end = time.monotonic_ns()
    images = (args.batches - 1) * args.batch
    print(
        json.dumps(
            {
                "case": "startup-loader",
                "t_start_ns": T_START_NS,
                "t_first_ns": first,
                "t_end_ns": end,
                "img_per_s": images / max(1e-9, (end - first) / 1e9),
                "workers": args.workers,
                "device": args.device,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
