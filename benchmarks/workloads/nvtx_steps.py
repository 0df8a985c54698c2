"""A training loop that marks its steps with NVTX: ``torch.cuda.nvtx.range_push
("train_step")`` ... ``range_pop()`` around each step, ``forward`` and ``backward``
nested inside, and the loss read every step (``.item()``, as a loop that logs it does).
gtop's report should take its steps from the ``train_step`` range (issue 25 item 2).

The steps after ``--warmup`` are timed with the GPU synchronised at both ends. Prints
one JSON line at the end (window of the timed steps, steps/s).

    gtop record -o nvtx-steps.gtop -- python benchmarks/workloads/nvtx_steps.py
"""

from __future__ import annotations

import argparse

import torch
from _common import emit, mlp, now_ns
from torch import nn
from torch.cuda import nvtx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # few kernels to a long step (~25 to ~10 ms in FP32 on an H200): a second of it is a
    # small excerpt to commit (recordings/ stay under 15 MB)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--width", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = mlp(args.width, args.layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.width, device="cuda")
    y = torch.randint(0, 10, (args.batch,), device="cuda")

    def step() -> float:
        nvtx.range_push("train_step")
        opt.zero_grad(set_to_none=True)
        nvtx.range_push("forward")
        loss = nn.functional.cross_entropy(model(x), y)
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        opt.step()
        value = loss.item()
        nvtx.range_pop()
        return value

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    t0 = now_ns()
    total = sum(step() for _ in range(args.steps))
    torch.cuda.synchronize()
    t1 = now_ns()
    emit(
        "nvtx-steps",
        (t0, t1),
        {
            "steps": "from NVTX range 'train_step' (forward, backward nested in it)",
            "cause": "GPU-bound: G:COMP (two 8192-wide layers, batch 1024, FP32)",
        },
        steps_per_s=args.steps / ((t1 - t0) / 1e9),
        steps=args.steps,
        layers=args.layers,
        width=args.width,
        batch=args.batch,
        loss=total / args.steps,
    )


if __name__ == "__main__":
    main()
