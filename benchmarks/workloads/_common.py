"""Shared bits of the GPU-machine workloads: CUDA-event timing, matmul calibration, the
result line. Imported by the scripts next to it (their folder is on ``sys.path``)."""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn


def cuda_ms(fn: Callable[[], None], reps: int = 5) -> float:
    """Mean GPU time of ``fn`` in ms, from CUDA events (after one warm-up call)."""
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def calibrated_matmuls(target_ms: float) -> tuple[Callable[[], None], float]:
    """A function launching bf16 matmuls that together take about ``target_ms`` on the
    GPU, and its measured time in ms. Shrinks the matrix until one matmul fits, then
    repeats it."""
    n = 8192
    while True:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        one = cuda_ms(lambda a=a, b=b, out=out: torch.mm(a, b, out=out))
        if one <= target_ms or n <= 256:
            break
        n //= 2
    reps = max(1, round(target_ms / one))

    def work(a: torch.Tensor = a, b: torch.Tensor = b, out: torch.Tensor = out) -> None:
        for _ in range(reps):
            torch.mm(a, b, out=out)

    return work, cuda_ms(work)


def emit(case: str, window: tuple[int, int], expected: dict[str, Any], **extra: Any) -> None:
    """Print the one JSON line a check reads: the CLOCK_MONOTONIC window to attribute,
    the shares constructed by the workload, and where it ran."""
    print(
        json.dumps(
            {
                "case": case,
                "window_ns": list(window),
                "duration_s": (window[1] - window[0]) / 1e9,
                "expected": expected,
                "device": torch.cuda.get_device_name(),
                "torch": torch.__version__,
                "python": platform.python_version(),
                "command": " ".join([sys.executable, *sys.argv]),
                **extra,
            }
        ),
        flush=True,
    )


def now_ns() -> int:
    """CLOCK_MONOTONIC ns, gtop's clock."""
    return time.monotonic_ns()


def mlp(width: int, layers: int) -> nn.Module:
    """``layers`` Linear+GELU blocks of ``width``, and a head of 10 classes."""
    blocks: list[nn.Module] = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.GELU()]
    return nn.Sequential(*blocks, nn.Linear(width, 10))
