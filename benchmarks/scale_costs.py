"""Per-event costs measured on real recordings, and what they come to at scale
(``docs/scale.md``): 8 GPUs for 1 hour, and 1,024 GPUs (128 hosts of 8) for 10 minutes.

    python benchmarks/scale_costs.py [--rank-recording recordings/train_loop_cupti.gtop]

Measured here: per stream, rows per second of one rank (a GPT training loop recorded on
an H200 under ``gtop record --agent-mode full``) and bytes per row on disk (compressed
chunks; stacks: all the compressed entity chunks, counted per stack); ``gtop merge``
throughput (rows/s, merging two real recordings); ``gtop report`` throughput (rows/s over
the rank recording); the ranks analysis (thread-state rows/s). Prints the measurements and the
projections as Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REC = ROOT / "recordings"
DEFAULT_KINDS = ("kernel", "memcpy", "memset", "sync")
"""CUPTI streams of ``--agent-mode default`` (``full`` adds api, overhead, markers)."""
HOST_STREAMS = ("thread_state", "cpu_sample", "proc_host", "proc_gpu", "gpu")
SCENARIOS = (("8 GPUs × 1 h", 8, 1, 3600.0), ("1,024 GPUs × 10 min", 1024, 128, 600.0))


def stream_costs(path: Path) -> tuple[float, dict[str, tuple[float, float]], tuple[float, float]]:
    """Duration (s); per stream (rows/s, bytes/row); stacks (new stacks/s, bytes each)."""
    from gtop.recordings.reader import Recording

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
    seconds = (meta["t_end_ns"] - meta["t_start_ns"]) / 1e9
    rows = db.execute("SELECT stream, SUM(n), SUM(LENGTH(data)) FROM chunks GROUP BY stream")
    streams = {s: (n / seconds, b / n) for s, n, b in rows}
    (b,) = db.execute("SELECT SUM(LENGTH(data)) FROM entity_chunks").fetchone()
    db.close()
    with Recording(path) as rec:
        n = len(rec.entities("stack"))
    return seconds, streams, (n / seconds, (b or 0) / max(n, 1))


def merge_rate(paths: list[Path]) -> float:
    """Rows per second through :func:`gtop.recordings.merge.merge`."""
    from gtop.recordings.merge import merge
    from gtop.recordings.reader import Recording

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        out = merge(paths, Path(tmp) / "m.gtop")
        dt = time.perf_counter() - t
        with Recording(out) as rec:
            rows = sum(c.n for s in rec.streams for c in rec.chunks(s))
    return rows / dt


def report_rate(path: Path) -> float:
    """Rows per second through ``gtop report`` (reading, attribution, every section)."""
    from gtop.analysis.report.document import build_report
    from gtop.recordings.reader import Recording
    from gtop.recordings.report_data import read_report_data

    with Recording(path) as rec:
        rows = sum(c.n for s in rec.streams for c in rec.chunks(s))
        t = time.perf_counter()
        data, kernels = read_report_data(rec)
        build_report(rec.meta, data, rec.entities(), [], rec.time_range(), kernels)
        return rows / (time.perf_counter() - t)


def ranks_rate(path: Path) -> float:
    """Thread-state rows per second through the ranks analysis."""
    from gtop.analysis.distributed.ranks import analyse
    from gtop.recordings.ranks_data import inputs
    from gtop.recordings.reader import Recording

    with Recording(path) as rec:
        t0, t1 = rec.time_range()
        t = time.perf_counter()
        job = inputs(rec)
        analyse(job, t0, t1 + 1)
        return len(job.records.states) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank-recording", type=Path, default=REC / "train_loop_cupti.gtop")
    args = ap.parse_args()
    seconds, streams, (stacks_s, stack_bytes) = stream_costs(args.rank_recording)
    print(f"One rank: `{args.rank_recording.name}` ({seconds:.1f} s)\n")
    print("| stream | rows/s | bytes/row on disk | MB/h |")
    print("|---|---|---|---|")
    for name, (rate, size) in sorted(streams.items(), key=lambda kv: -kv[1][0] * kv[1][1]):
        print(f"| {name} | {rate:,.0f} | {size:.2f} | {rate * size * 3600 / 1e6:,.1f} |")
    stack_mb = stacks_s * stack_bytes * 3600 / 1e6
    print(f"| stacks (entities) | {stacks_s:,.1f} new/s | {stack_bytes:,.0f} each | "
          f"{stack_mb:,.1f} (upper bound: new stacks tail off) |")  # fmt: skip
    merged = merge_rate([REC / "train_loop_cupti.gtop", REC / "decode-eager.gtop"])
    report = report_rate(args.rank_recording)
    ranks = ranks_rate(REC / "ddp-straggler-cpu.gtop")
    print("\n| operation | rows/s (this machine, one core) |")
    print("|---|---|")
    print(f"| gtop merge | {merged:,.0f} |\n| gtop report | {report:,.0f} |")
    print(f"| ranks analysis (thread-state rows) | {ranks:,.0f} |")

    def per_rank(kinds: tuple[str, ...]) -> tuple[float, float]:
        names = [s for s in streams if s in kinds or s in HOST_STREAMS]
        rows = sum(streams[s][0] for s in names)
        return rows, sum(streams[s][0] * streams[s][1] for s in names)

    print("\n| scenario | agent mode | rows per host | GB per host | GB in all | "
          "merge, one process | report of one host |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for label, gpus, hosts, secs in SCENARIOS:
        for mode, kinds in (("default", DEFAULT_KINDS), ("full", tuple(streams))):
            rows_s, bytes_s = per_rank(kinds)
            host_rows = rows_s * secs * gpus / hosts
            host_gb = (bytes_s * secs * gpus / hosts) / 1e9
            merge_min = host_rows * hosts / merged / 60
            print(
                f"| {label} | {mode} | {host_rows:,.0f} | {host_gb:,.2f} | {host_gb * hosts:,.1f} "
                f"| {merge_min:,.0f} min | {host_rows / report / 60:,.1f} min |"
            )


if __name__ == "__main__":
    main()
