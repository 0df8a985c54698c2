"""Throughput of on-/off-GPU attribution on synthetic records (no GPU needed).

Two checks, printed as a table:

* live: an :class:`~gtop.analysis.attribution.sliding_window.AttributionEngine` is fed 100 ms
chunks at
  ``--rate`` CUPTI records/s (half kernels, half launch API calls, plus copies, syncs)
  and host events (thread switches, stack samples), and asked for the device result
  and the ribbon slices once per simulated second. It keeps up when records/s processed
  (records fed / CPU seconds spent) exceeds the rate; memory must stay flat (RSS sampled
  every 10 simulated seconds).
* replay: ``gpu_report`` over ``--minutes`` of records at ``--kernels`` kernels/s (what
  ``gtop report`` does after reading a recording).
* report (``--report``): the same records written to a ``.gtop`` file, and the whole
  ``gtop report --json`` command run on it in a child process (reading, decoding, every
  report section); CPU time is the child's user + system time.

Run: ``python benchmarks/attribution_speed.py [--minutes 10] [--kernels 20000] [--report]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import gtop
from gtop.analysis.attribution import slices
from gtop.analysis.attribution.records import Records
from gtop.analysis.attribution.sliding_window import AttributionEngine
from gtop.analysis.report.gpu_report import gpu_report
from gtop.core import layouts
from gtop.recordings.writer import RecordingWriter

PID, MAIN, LOADER = 4242, 4242, 4243
NS = 1_000_000_000


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def synthetic(
    t0: int, seconds: float, kernels_per_s: int, seed: int = 0, api_records: bool = True
) -> dict[str, np.ndarray]:
    """A launch-heavy training-like loop: one launch call per kernel, a synchronise every
    200 kernels, a copy every 100, ~1k thread switches/s, 100 Hz stack samples. Without
    ``api_records`` (CUPTI runtime/driver tracing off) there are no API call rows."""
    rng = np.random.default_rng(seed)
    n = int(seconds * kernels_per_s)
    period = NS // kernels_per_s
    launch = t0 + np.arange(n, dtype=np.int64) * period + rng.integers(0, period // 4, n)
    corr = np.arange(1, n + 1, dtype=np.uint32) + np.uint32((t0 // period) % 2**31)
    api = layouts.API.empty(n)
    api["t_ns"], api["end_ns"] = launch, launch + 3_000
    api["pid"], api["tid"], api["correlation"] = PID, MAIN, corr
    api["api_class"] = layouts.ApiClass.LAUNCH
    k = layouts.KERNEL.empty(n)
    k["t_ns"] = launch + 5_000
    k["end_ns"] = k["t_ns"] + rng.integers(period // 5, period * 3 // 4, n)
    k["queued_ns"] = k["submitted_ns"] = 0
    k["pid"], k["device"], k["stream"], k["correlation"] = PID, 0, 7, corr
    k["name_id"] = rng.integers(1, 50, n)
    sync = api[::200].copy()
    sync["t_ns"] += 3_000
    sync["end_ns"] = k["end_ns"][::200] + 2_000
    sync["api_class"], sync["correlation"] = layouts.ApiClass.SYNC, 0
    m = k[::100]
    cp = layouts.MEMCPY.empty(len(m))
    cp["t_ns"], cp["end_ns"] = m["end_ns"], m["end_ns"] + period // 10
    cp["pid"], cp["device"], cp["stream"], cp["copy_kind"] = PID, 0, 8, layouts.CopyKind.HTOD
    switches = int(seconds * 1000)
    edges = np.sort(rng.integers(t0, t0 + int(seconds * NS), 2 * switches))
    st = layouts.THREAD_STATE.empty(2 * switches - 1)
    st["t_ns"], st["end_ns"] = edges[:-1], edges[1:]
    st["pid"], st["tid"] = PID, np.where(np.arange(len(st)) % 4 == 0, LOADER, MAIN)
    st["state"] = np.where(
        np.arange(len(st)) % 2 == 0, layouts.ThreadState.ON_CPU, layouts.ThreadState.BLOCKED
    )
    st["reason"] = np.where(st["state"] == layouts.ThreadState.BLOCKED, layouts.BlockReason.LOCK, 0)
    st["stack_id"] = rng.integers(1, 100, len(st))
    samples = layouts.CPU_SAMPLE.empty(int(seconds * 200))
    samples["t_ns"] = np.sort(rng.integers(t0, t0 + int(seconds * NS), len(samples)))
    samples["pid"], samples["tid"] = PID, np.where(np.arange(len(samples)) % 2, MAIN, LOADER)
    samples["stack_id"] = rng.integers(1, 100, len(samples))
    return {
        "kernel": k,
        "api": np.concatenate((api, sync)) if api_records else api[:0],
        "memcpy": cp,
        "thread_state": st,
        "cpu_sample": samples,
    }


def live(rate: int, seconds: int, window_s: float) -> list[tuple[str, str]]:
    engine = AttributionEngine(int(window_s * NS), slack_ns=NS)
    t0, fed, cpu, rss = 10 * NS, 0, 0.0, []
    for step in range(seconds * 10):
        start = t0 + step * NS // 10
        batch = synthetic(start, 0.1, rate // 2, seed=step)
        c = time.process_time()
        engine.feed(batch)
        if step % 10 == 9:
            res = engine.result("device", lag_ns=NS // 2)
            for r in res.values():
                slices.dominant(slices.occupancy(r.partition, slices.edges(r.t0, r.t1, NS // 100)))
        cpu += time.process_time() - c
        fed += sum(len(b) for b in batch.values())
        if step % 100 == 99:
            rss.append(rss_mib())
    return [
        ("live: input rate (records/s)", f"{rate:,} CUPTI + {fed // seconds - rate:,} host"),
        ("live: window / simulated time", f"{window_s:g} s / {seconds} s"),
        ("live: records/s processed", f"{fed / cpu:,.0f}"),
        ("live: CPU share of one core", f"{cpu / seconds:.0%}"),
        ("live: engine bytes held", f"{engine.nbytes() / 2**20:.1f} MiB"),
        ("live: RSS every 10 s (MiB)", " ".join(f"{r:.0f}" for r in rss)),
    ]


def replay(minutes: float, kernels_per_s: int, api_records: bool) -> list[tuple[str, str]]:
    t0 = 10 * NS
    batches = synthetic(t0, minutes * 60, kernels_per_s, api_records=api_records)
    rows = sum(len(b) for b in batches.values())
    c = time.perf_counter()
    rec = Records.from_streams(batches)
    conv = time.perf_counter() - c
    c, cpu = time.perf_counter(), time.process_time()
    report = gpu_report(rec, t0, t0 + int(minutes * 60 * NS))
    took, cpu = time.perf_counter() - c, time.process_time() - cpu
    return [
        (
            "replay: recording",
            f"{minutes:g} min, {kernels_per_s:,} kernels/s, {rows:,} rows"
            + ("" if api_records else " (no API records)"),
        ),
        ("replay: layout -> compact records", f"{conv:.2f} s"),
        (
            "replay: gpu_report",
            f"{took:.2f} s wall, {cpu:.2f} s CPU (GAR {report['0']['gar']:.3f})",
        ),
        ("machine load (1-min average)", f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"),
        (
            "replay: peak RSS",
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB",
        ),
    ]


def write_recording(path: Path, batches: dict[str, np.ndarray]) -> None:
    """``batches`` as a recording, each stream in time order (as a recorder writes it)."""
    writer = RecordingWriter(path, {"host": "synthetic"})
    for name, rows in batches.items():
        if len(rows):
            writer.append(name, rows[np.argsort(rows["t_ns"], kind="stable")])
    writer.close()


def report(minutes: float, kernels_per_s: int, api_records: bool) -> list[tuple[str, str]]:
    batches = synthetic(10 * NS, minutes * 60, kernels_per_s, api_records=api_records)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.gtop"
        write_recording(path, batches)
        del batches
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        c = time.perf_counter()
        cmd = [sys.executable, "-m", "gtop", "report", "--json", str(path)]
        # The child runs the gtop this script imported (``-m`` would prefer the cwd's).
        env = {**os.environ, "PYTHONPATH": str(Path(gtop.__file__).resolve().parents[1])}
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=tmp, env=env)
        took = time.perf_counter() - c
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        size = path.stat().st_size
    user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return [
        ("report: recording file", f"{size / 2**20:.0f} MiB"),
        (
            "report: gtop report --json",
            f"{took:.2f} s wall, {user + system:.2f} s CPU ({user:.2f} user + {system:.2f} sys), "
            f"peak RSS {after.ru_maxrss / 2**20:.1f} GiB",
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=100_000, help="live CUPTI records/s")
    ap.add_argument("--seconds", type=int, default=60, help="live simulated seconds")
    ap.add_argument("--window", type=float, default=5.0, help="live window, seconds")
    ap.add_argument("--minutes", type=float, default=10.0, help="replay length")
    ap.add_argument("--kernels", type=int, default=20_000, help="replay kernels/s")
    ap.add_argument("--no-api", action="store_true", help="replay without API call records")
    ap.add_argument("--report", action="store_true", help="also time `gtop report` on a file")
    args = ap.parse_args()
    rows = live(args.rate, args.seconds, args.window) + replay(
        args.minutes, args.kernels, not args.no_api
    )
    if args.report:
        rows += report(args.minutes, args.kernels, not args.no_api)
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
