"""A target for ``benchmarks/attach_soak.py``: runs ``--seconds`` in one of the states an
attach must survive, checks that its own results did not change, and exits 0 (1 when they
did). It prints ``ok STEPS`` or ``MISMATCH ...`` last.

Modes: ``decode`` (a batch-1, 8-layer attention decode, launch-bound, with a ``.item()``
routing decision in every layer: the main thread syncs all the time), ``loader`` (a
DataLoader with 2 worker processes, its iterator made anew every 40 batches: forks all
the time), ``triton`` (a new Triton kernel compiled every few steps), ``cblock`` (the main
thread waits ~2 s at a time in one synchronise on a long GPU queue: one long C call).
Every GPU mode starts with ``import torch`` (imported by the mode: the CPU ones need none)
and CUDA's start-up, where an attach also lands.

CPU-only modes (no torch, no GPU): ``alloc`` (the main thread builds and drops dicts and
lists while a second thread allocates too: the heap's locks are busy all the time),
``sleep`` (the main thread blocked in ``time.sleep(2)`` at a time: one long C call),
``spin`` (a pure-Python loop, no allocation to speak of), ``tick`` (a light target: a
little work every 5 ms, so that k targets at once leave the machine to k gtops),
``forks`` (the loader's shape without torch: a pool of 2 forked workers made anew every
20 maps).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def decode(seconds: float) -> tuple[int, float, float]:
    import torch

    torch.manual_seed(0)
    layers = [torch.nn.MultiheadAttention(256, 8, batch_first=True).cuda().eval() for _ in range(8)]
    x0 = torch.randn(1, 16, 256, device="cuda")

    def step(x: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            y, _ = layer(x, x, x, need_weights=False)
            x = y if y.mean().item() > -1e9 else x  # a routing decision on the host
        return x

    with torch.no_grad():
        ref = step(x0).sum().item()
        steps, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            step(x0)
            steps += 1
        again = step(x0).sum().item()
    return steps, ref, again


def loader(seconds: float) -> tuple[int, float, float]:
    import torch

    data = torch.arange(4096 * 64, dtype=torch.float32).reshape(4096, 64)
    ds = torch.utils.data.TensorDataset(data)
    w = torch.ones(64, 64, device="cuda")
    ref = (data[:32].cuda() @ w).sum().item()
    steps, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        dl = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=2)
        for i, (batch,) in enumerate(dl):
            (batch.cuda() @ w).sum()
            steps += 1
            if i == 40 or time.monotonic() >= end:
                break
    again = (data[:32].cuda() @ w).sum().item()
    return steps, ref, again


def triton_compiles(seconds: float) -> tuple[int, float, float]:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def scale(x_ptr, out_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)

    x = torch.arange(1 << 16, device="cuda", dtype=torch.float64)  # sums exact
    out = torch.empty_like(x)

    def run(factor: int) -> float:
        scale[(x.numel() // 1024,)](x, out, x.numel(), FACTOR=factor, BLOCK=1024)
        return out.sum().item() / factor

    ref = run(1)
    steps, factor, end = 0, 2, time.monotonic() + seconds
    while time.monotonic() < end:
        if run(factor) != ref:  # a new constexpr: a new compile
            return steps, ref, float("nan")
        factor, steps = factor + 1, steps + 1
    return steps, ref, run(1)


def cblock(seconds: float) -> tuple[int, float, float]:
    import torch

    a = torch.randn(4096, 4096, device="cuda")
    ref = (a @ a).sum().item()
    steps, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.02:  # queue ~2 s of GPU work, then wait for it
            for _ in range(50):
                a @ a
        torch.cuda.synchronize()
        steps += 1
    return steps, ref, (a @ a).sum().item()


def _churn(n: int) -> int:
    """Allocation-heavy work with a known result."""
    d = {i: str(i) for i in range(n)}
    return sum(len(v) for v in d.values()) + len([[i] for i in range(n)])


def alloc(seconds: float) -> tuple[int, float, float]:
    ref = _churn(5000)
    stop = threading.Event()
    side: list[int] = []

    def helper() -> None:
        while not stop.is_set():
            side.append(_churn(1000))
            del side[:-1]
            time.sleep(0.001)

    thread = threading.Thread(target=helper, name="churn")
    thread.start()
    steps, end, again = 0, time.monotonic() + seconds, ref
    while time.monotonic() < end and again == ref:
        again = _churn(5000)
        steps += 1
    stop.set()
    thread.join()
    return steps, ref, again


def sleep(seconds: float) -> tuple[int, float, float]:
    steps, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(2.0, max(0.0, end - time.monotonic())))
        steps += 1
    return steps, 0.0, 0.0


def spin(seconds: float) -> tuple[int, float, float]:
    def work() -> int:
        total = 0
        for i in range(20000):
            total += i * i % 7
        return total

    ref = work()
    steps, end, again = 0, time.monotonic() + seconds, ref
    while time.monotonic() < end and again == ref:
        again = work()
        steps += 1
    return steps, ref, again


def tick(seconds: float) -> tuple[int, float, float]:
    ref = _churn(100)
    steps, end, again = 0, time.monotonic() + seconds, ref
    while time.monotonic() < end and again == ref:
        again = _churn(100)
        time.sleep(0.005)
        steps += 1
    return steps, ref, again


def _square(i: int) -> int:
    return i * i


def forks(seconds: float) -> tuple[int, float, float]:
    """CPU only, the loader's shape: a pool of 2 forked workers made anew every 20 maps
    (forks while attaches land), and a thread at import time's pace."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    ref = sum(map(_square, range(200)))
    steps, end, again = 0, time.monotonic() + seconds, ref
    while time.monotonic() < end and again == ref:
        with ctx.Pool(2) as pool:
            for _ in range(20):
                again = sum(pool.map(_square, range(200)))
                steps += 1
    return steps, ref, again


MODES = {
    "decode": decode,
    "loader": loader,
    "triton": triton_compiles,
    "cblock": cblock,
    "alloc": alloc,
    "sleep": sleep,
    "spin": spin,
    "tick": tick,
    "forks": forks,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=sorted(MODES))
    ap.add_argument("--seconds", type=float, default=20.0)
    args = ap.parse_args()
    steps, ref, again = MODES[args.mode](args.seconds)
    if again != ref:
        print(f"MISMATCH {args.mode}: {ref!r} then {again!r}", flush=True)
        sys.exit(1)
    print(f"ok {steps}", flush=True)


if __name__ == "__main__":
    main()
