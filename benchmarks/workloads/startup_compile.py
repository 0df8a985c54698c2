"""A short job that ``torch.compile``s a small MLP-mixer-style model and runs it.

Inductor compiles in worker processes (it starts a pool of compile workers, spawned, each
a fresh Python), so a profiler that costs something per process shows up here. Runs
``--steps`` compiled training steps and exits; prints one JSON line with CLOCK_MONOTONIC
times of the script's first line, the first compiled step and the end, and the steps/s
after the first.

    python benchmarks/workloads/startup_compile.py [--steps 30] [--device cuda]
"""

from __future__ import annotations

import time

T_START_NS = time.monotonic_ns()  # before torch is imported

import argparse  # noqa: E402
import json  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402


class Mixer(nn.Module):
    def __init__(self, dim: int, depth: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)
            )
            for _ in range(depth)
        )
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = x + b(x)
        return self.head(x.mean(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Mixer(args.dim, args.depth).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step_fn = torch.compile(model)
    x = torch.randn(32, 64, args.dim, device=args.device)
    y = torch.randint(0, 10, (32,), device=args.device)
    first = None
    for _ in range(args.steps):
        loss = nn.functional.cross_entropy(step_fn(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if first is None:
            loss.item()
            first = time.monotonic_ns()
    loss.item()
    end = time.monotonic_ns()
    print(
        json.dumps(
            {
                "case": "startup-compile",
                "t_start_ns": T_START_NS,
                "t_first_ns": first,
                "t_end_ns": end,
                "steps": args.steps,
                "steps_per_s": (args.steps - 1) / max(1e-9, (end - first) / 1e9),
                "device": args.device,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
