"""One rank of a data-parallel training job in which one rank is slow by construction.

Run under torchrun (``torchrun --nproc-per-node 2 ddp_straggler.py --out DIR``). Every
step each rank runs a forward and backward pass of a small MLP, the slow rank
(``--slow-rank``) then sleeps ``--sleep-ms``, and all ranks all-reduce their flattened
gradients (what DDP does after backward, done here in the open so the wait has a
Python frame: ``all_reduce`` in ``torch/distributed/distributed_c10d.py``). Each rank
writes ``DIR/rank-R.json``: its CLOCK_MONOTONIC enter/exit time of every all-reduce,
the ground truth that :mod:`benchmarks.capture_ddp` turns into the expected wait.

Backend: ``nccl`` on CUDA when both ranks can share the device (NCCL refuses two ranks
on one GPU), else ``gloo`` (on CUDA it copies the tensors through the host).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--sleep-ms", type=float, default=20.0)
    p.add_argument("--slow-rank", type=int, default=1)
    p.add_argument("--width", type=int, default=512, help="MLP width (compute per step)")
    p.add_argument(
        "--go-file",
        type=Path,
        help="after the warm-up, write OUT/ready-RANK and wait until this file exists",
    )
    return p.parse_args()


def main() -> None:
    args = _args()
    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    if args.device == "cuda":
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
        torch.set_num_threads(1)
    dist.init_process_group(args.backend)
    torch.manual_seed(0)
    w = args.width
    model = torch.nn.Sequential(
        torch.nn.Linear(w, w), torch.nn.ReLU(), torch.nn.Linear(w, w), torch.nn.ReLU()
    ).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, w, device=device)
    enters: list[int] = []
    exits: list[int] = []
    for step in range(args.warmup + args.steps):
        if step == args.warmup and args.go_file is not None:
            (args.out / f"ready-{rank}").touch()
            while not args.go_file.exists():
                time.sleep(0.005)
        opt.zero_grad()
        model(x).square().mean().backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        if args.device == "cuda":
            torch.cuda.synchronize()
        if rank == args.slow_rank:
            time.sleep(args.sleep_ms / 1e3)
        t_enter = time.monotonic_ns()
        dist.all_reduce(flat)
        if args.device == "cuda":
            torch.cuda.synchronize()
        t_exit = time.monotonic_ns()
        opt.step()
        if step >= args.warmup:
            enters.append(t_enter)
            exits.append(t_exit)
    dist.barrier()
    result = {
        "rank": rank,
        "local_rank": local,
        "pid": os.getpid(),
        "backend": args.backend,
        "device": str(device),
        "enter_ns": enters,
        "exit_ns": exits,
    }
    (args.out / f"rank-{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
