"""A 6-layer MLP under ``torch.compile``, then ``--steps`` training steps: a job whose
first seconds are compilation (inductor, Triton JIT; autotuning with ``--mode
max-autotune-no-cudagraphs``), not its steady state (issue 25: one-time phases).

The first step compiles (timed on its own: ``compile_s``); the steps after it are the
steady state, timed with the GPU synchronised at both ends. Prints one JSON line at the
end (window of the steady steps, compile time, steps/s).

    gtop record -o compile-mlp.gtop -- python benchmarks/workloads/compile_mlp.py
"""

from __future__ import annotations

import argparse
import time

import torch
from _common import emit, mlp, now_ns
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    # 4096 x batch 1024: ~10 ms of FP32 matmuls a step on an H200, so the steady state is
    # GPU-bound; at 2048 x 256 (the first H200 recording) the step was 3.1 ms, 38% of it
    # on the GPU, and the eager optimizer's Python the largest cause
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument(
        "--mode",
        default="default",
        help="torch.compile mode (max-autotune-no-cudagraphs also autotunes: on the H200 "
        "under gtop that ran past 150 s before the first steady step)",
    )
    args = ap.parse_args()
    torch.manual_seed(0)
    model = mlp(args.width, args.layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    compiled = torch.compile(model, mode=args.mode)
    x = torch.randn(args.batch, args.width, device="cuda")
    y = torch.randint(0, 10, (args.batch,), device="cuda")

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        return loss

    c0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - c0
    t0 = now_ns()
    total = torch.zeros((), device="cuda")
    for _ in range(args.steps):
        total += step().detach()
    loss = total.item() / args.steps
    torch.cuda.synchronize()
    t1 = now_ns()
    emit(
        "compile-mlp",
        (t0, t1),
        {
            "phase": "compilation first (inductor, Triton autotune), then the steady steps",
            "cause": "GPU-bound: G:COMP, the steady state after the compile",
        },
        steps_per_s=args.steps / ((t1 - t0) / 1e9),
        compile_s=compile_s,
        steps=args.steps,
        layers=args.layers,
        width=args.width,
        batch=args.batch,
        mode=args.mode,
        loss=loss,
    )


if __name__ == "__main__":
    main()
