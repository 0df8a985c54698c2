"""A torch training loop whose DataLoader is deliberately slow (the GPU waits for data).

Each sample is read from its own file, decoded and put through CPU-heavy transforms, in
two worker processes; the model is small, so the main thread mostly waits on the loader
queue, then synchronises with the GPU every step (``loss.item()`` and an explicit
``torch.cuda.synchronize()``). ``--gpu-ms`` adds that much GPU work (chained matmuls,
calibrated at start) to each step, so that the synchronisation really waits: without it
the small model is done before the host gets there and each sync returns in microseconds.
Prints ``READY <json>`` once the first batch trained.

    python benchmarks/workloads/slow_loader_train.py --seconds 30 [--workers 2] [--gpu-ms 30]
        [--device cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

SAMPLE_BYTES = 2 * 1024 * 1024
CHUNK = 64 * 1024


class FileDataset(Dataset):
    """Samples are files: read, decode, transform on the CPU."""

    def __init__(self, root: str, n: int) -> None:
        self.paths = [os.path.join(root, f"{i}.bin") for i in range(n)]

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        raw = read_sample(self.paths[i])
        x = cpu_transform(raw)
        return torch.from_numpy(x), torch.tensor(i % 10)


def read_sample(path: str) -> bytes:
    """Read a file in chunks after dropping it from the page cache (so reads hit disk)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        chunks = []
        while chunk := os.read(fd, CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def cpu_transform(raw: bytes) -> np.ndarray:
    a = np.frombuffer(raw, dtype=np.uint8)[: 256 * 1024].astype(np.float32).reshape(256, 1024)
    for _ in range(3):
        a = np.abs(np.fft.irfft(np.fft.rfft(a, axis=1), axis=1))
    return (a[:, :256] / 255.0).reshape(-1)[:4096].copy()


def make_files(root: str, n: int) -> None:
    rng = np.random.default_rng(0)
    for i in range(n):
        with open(os.path.join(root, f"{i}.bin"), "wb") as f:
            f.write(rng.integers(0, 256, SAMPLE_BYTES, dtype=np.uint8).tobytes())
            os.fsync(f.fileno())  # clean pages can be dropped from the cache before reads


def gpu_work(a: torch.Tensor, reps: int) -> None:
    """``reps`` chained matmuls on the GPU (queued; the caller's sync waits for them)."""
    for _ in range(reps):
        a = a @ a
        a = a / a.norm()


def calibrate(device: str, gpu_ms: float) -> tuple[torch.Tensor | None, int]:
    """A square matrix and how many matmuls of it take ``gpu_ms`` on this GPU."""
    if device != "cuda" or gpu_ms <= 0:
        return None, 0
    a = torch.randn(4096, 4096, device=device) / 64
    gpu_work(a, 3)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    gpu_work(a, 10)
    end.record()
    end.synchronize()
    return a, max(1, round(gpu_ms / (start.elapsed_time(end) / 10)))


def train_step(model, opt, x, y, device: str, extra=(None, 0)) -> float:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if extra[1]:
        gpu_work(*extra)
    if device == "cuda":
        torch.cuda.synchronize()
    return loss.item()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--samples", type=int, default=512)
    ap.add_argument("--gpu-ms", type=float, default=0.0, help="extra GPU work per step")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run without a GPU")
    ap.add_argument("--data-dir", default=".", help="where the sample files are written")
    args = ap.parse_args()
    # not /tmp, which may be a tmpfs: the reads should reach a disk
    with tempfile.TemporaryDirectory(dir=args.data_dir) as root:
        make_files(root, args.samples)
        loader = DataLoader(
            FileDataset(root, args.samples), batch_size=16, shuffle=True,
            num_workers=args.workers, persistent_workers=True,
        )  # fmt: skip
        model = torch.nn.Sequential(
            torch.nn.Linear(4096, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)
        ).to(args.device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        extra = calibrate(args.device, args.gpu_ms)
        end, steps, ready = time.monotonic() + args.seconds, 0, False
        while time.monotonic() < end:
            for x, y in loader:
                train_step(model, opt, x, y, args.device, extra)
                steps += 1
                if not ready:
                    info = {
                        "pid": os.getpid(),
                        "workers": [w.pid for w in loader._iterator._workers],
                        "gpu_reps": extra[1],
                    }
                    print("READY " + json.dumps(info), flush=True)
                    ready = True
                if time.monotonic() >= end:
                    break
        print(json.dumps({"steps": steps, "seconds": args.seconds}), flush=True)


if __name__ == "__main__":
    main()
