"""GPU workload with known phases: idle, busy (bf16 matmuls), idle.

Prints ``READY`` once CUDA is initialised and each phase change as ``PHASE name t``
(CLOCK_MONOTONIC seconds), so a recording can be checked against the phases.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle-s", type=float, default=5.0)
    parser.add_argument("--busy-s", type=float, default=10.0)
    parser.add_argument("--size", type=int, default=8192)
    args = parser.parse_args()
    a = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    print("READY", flush=True)
    print(f"PHASE idle {time.monotonic():.3f}", flush=True)
    time.sleep(args.idle_s)
    print(f"PHASE busy {time.monotonic():.3f}", flush=True)
    end = time.monotonic() + args.busy_s
    while time.monotonic() < end:
        for _ in range(10):
            a = (a @ b).clamp_(-1, 1)
        torch.cuda.synchronize()
    print(f"PHASE idle {time.monotonic():.3f}", flush=True)
    time.sleep(args.idle_s)
    print(f"PHASE end {time.monotonic():.3f}", flush=True)


if __name__ == "__main__":
    main()
