"""A Triton matmul loop that mostly sleeps: 20 launches of kernel ``mm`` (16x16 blocks of
128 threads), a synchronise, ``time.sleep(0.01)``; about 1.8k launches/s on an H200.
The workload of issue 23's probe measurement (``benchmarks/probe_attach_cost.py``).

Prints ``ready`` once compiled and warm, then ``rate {"t_ns", "launches_per_s"}`` every
second (CLOCK_MONOTONIC), for ``--seconds``.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
import triton
import triton.language as tl

N = 2048
BM = BN = 128
BK = 64
LAUNCHES = 20
SLEEP_S = 0.01


@triton.jit
def mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B, row-major fp16, fp32 accumulation."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(pa), tl.load(pb), acc)
        pa += BK
        pb += BK * N
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=60.0)
    args = p.parse_args()
    a = torch.randn(N, N, device="cuda", dtype=torch.float16)
    b = torch.randn(N, N, device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    grid = (N // BM, N // BN)

    def step() -> None:
        for _ in range(LAUNCHES):
            mm[grid](a, b, c, N, N, N, BM=BM, BN=BN, BK=BK, num_warps=4)
        torch.cuda.synchronize()
        time.sleep(SLEEP_S)

    for _ in range(20):
        step()
    print("ready", flush=True)
    end = time.monotonic() + args.seconds
    t0, launches = time.monotonic(), 0
    while time.monotonic() < end:
        step()
        launches += LAUNCHES
        now = time.monotonic()
        if now - t0 >= 1.0:
            rate = {"t_ns": time.monotonic_ns(), "launches_per_s": launches / (now - t0)}
            print(f"rate {json.dumps(rate)}", flush=True)
            t0, launches = now, 0


if __name__ == "__main__":
    main()
