"""Recorder ingest rate, bytes per event and memory over a long run (issue 2 targets).

    python benchmarks/recorder_throughput.py                 # ingest + size table
    python benchmarks/recorder_throughput.py --soak 600      # + RSS over 10 min at 100k ev/s

The load is kernel records in the CUPTI ``kernel`` layout (94 bytes each), shaped like a
training step: 40 distinct kernels repeating with jittered durations and launch gaps,
one stream, increasing correlation ids. Targets: ≥ 1,000,000 events/s ingest, ≤ 16
bytes on disk per event, flat RSS.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

from gtop.core import layouts
from gtop.core.hub import Hub
from gtop.recordings.recorder import Recorder
from gtop.recordings.writer import RecordingWriter

BATCH = 10_000


def kernel_batch(rng: np.random.Generator, start_ns: int, first_corr: int, n: int) -> np.ndarray:
    rows = layouts.KERNEL.empty(n)
    kernel = np.arange(first_corr, first_corr + n) % 40
    duration = (5_000 + kernel * 3_000) * rng.uniform(0.95, 1.05, n)
    gap = rng.integers(1_500, 4_000, n)
    start = start_ns + np.cumsum(duration.astype(np.int64) + gap)
    rows["t_ns"] = start
    rows["end_ns"] = start + duration.astype(np.int64)
    rows["queued_ns"] = start - rng.integers(2_000, 50_000, n)
    rows["submitted_ns"] = rows["queued_ns"] + rng.integers(200, 1_000, n)
    rows["pid"], rows["device"], rows["context"], rows["stream"] = 4242, 0, 1, 7
    rows["correlation"] = np.arange(first_corr, first_corr + n)
    rows["grid_x"], rows["grid_y"], rows["grid_z"] = 132 * (1 + kernel % 4), 1, 1
    rows["block_x"], rows["block_y"], rows["block_z"] = 128 * (1 + kernel % 2), 1, 1
    rows["registers"] = 32 + kernel
    rows["static_smem"], rows["dynamic_smem"] = 0, (kernel % 3) * 16384
    rows["name_id"], rows["graph_id"], rows["graph_node_id"] = kernel, 0, 0
    return rows


def make_batches(total: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out, t = [], 10**12
    for corr in range(0, total, BATCH):
        rows = kernel_batch(rng, t, corr, BATCH)
        t = int(rows["end_ns"][-1])
        out.append(rows)
    return out


def bench_writer(batches: list[np.ndarray], path: Path) -> tuple[float, float]:
    """Events/s through the file writer alone, and bytes on disk per event."""
    writer = RecordingWriter(path, {"host": "bench"}, overwrite=True)
    start = time.perf_counter()
    for rows in batches:
        writer.append("kernel", rows)
    writer.close()
    elapsed = time.perf_counter() - start
    events = sum(len(b) for b in batches)
    return events / elapsed, path.stat().st_size / events


def bench_pipeline(batches: list[np.ndarray], path: Path, rate: int) -> tuple[float, int]:
    """Publish at ``rate`` events/s through hub → ring → recorder thread → file.

    Returns the rate achieved from first publish to the file's final commit, and the rows
    the recorder's queue dropped (0 means the recorder kept up).
    """
    hub = Hub()
    recorder = Recorder(hub, path, {"host": "bench"}, overwrite=True).start()
    start = time.perf_counter()
    sent = 0
    for rows in batches:
        hub.publish("kernel", rows)
        sent += len(rows)
        time.sleep(max(0.0, start + sent / rate - time.perf_counter()))
    recorder.stop()
    elapsed = time.perf_counter() - start
    return recorder.rows() / elapsed, sum(recorder.drops().values())


def soak(path: Path, seconds: float, rate: int) -> list[tuple[float, float, int]]:
    """Publish ``rate`` events/s for ``seconds``; RSS (MiB) every 30 s."""
    hub = Hub()
    recorder = Recorder(hub, path, {"host": "soak"}, overwrite=True).start()
    proc = psutil.Process()
    rng = np.random.default_rng(1)
    samples: list[tuple[float, float, int]] = []
    stop = threading.Event()
    start = time.monotonic()
    corr, t = 0, 10**12
    next_sample = 0.0
    while not stop.is_set():
        elapsed = time.monotonic() - start
        if elapsed >= seconds:
            break
        if elapsed >= next_sample:
            samples.append((elapsed, proc.memory_info().rss / 2**20, recorder.rows()))
            next_sample += 30
        n = rate // 10
        rows = kernel_batch(rng, t, corr, n)
        t, corr = int(rows["end_ns"][-1]), corr + n
        hub.publish("kernel", rows)
        time.sleep(max(0.0, start + (corr / rate) - time.monotonic()))
    recorder.stop()
    samples.append((time.monotonic() - start, proc.memory_info().rss / 2**20, recorder.rows()))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--soak", type=float, default=0.0, metavar="S")
    parser.add_argument("--rate", type=int, default=100_000)
    args = parser.parse_args()
    batches = make_batches(args.events)
    with tempfile.TemporaryDirectory() as tmp:
        writer_rate, size = bench_writer(batches, Path(tmp) / "w.gtop")
        paced = [
            (r, *bench_pipeline(batches, Path(tmp) / f"p{r}.gtop", r))
            for r in (1_000_000, 2_000_000)
        ]
        print(
            f"machine: {os.cpu_count()} cores; {args.events:,} kernel records "
            f"({layouts.KERNEL.dtype.itemsize} B each in memory)"
        )
        print("| measure | result | target |")
        print("|---|---|---|")
        print(f"| ingest, writer alone | {writer_rate:,.0f} events/s | ≥ 1,000,000 |")
        for offered, achieved, dropped in paced:
            print(
                f"| ingest, hub → recorder thread → file, offered {offered:,}/s | "
                f"{achieved:,.0f} events/s written, {dropped:,} dropped | ≥ 1,000,000, "
                "0 dropped |"
            )
        print(f"| bytes on disk per event | {size:.2f} | ≤ 16 |")
        if args.soak:
            samples = soak(Path(tmp) / "s.gtop", args.soak, args.rate)
            print(f"\nRSS during {args.soak:.0f} s at {args.rate:,} events/s:")
            print("| elapsed s | RSS MiB | rows written |")
            print("|---|---|---|")
            for elapsed, rss, rows in samples:
                print(f"| {elapsed:.0f} | {rss:.1f} | {rows:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
