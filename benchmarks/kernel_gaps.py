"""Holes in a recording's kernel rows that the GPU did not make: per process, the places
where the launch order (CUPTI correlation ids) jumps by many calls while no kernel row
lies between, e.g. kernels still queued on the GPU at a forced flush (issue 25's compile
job lost ~1,000 on an H200 in 0.2 s), or kernel sampling's off phases (``untraced``).

    python benchmarks/kernel_gaps.py FILE.gtop [--min-calls 1500] [--min-s 0.03]

Prints one Markdown table row per hole, and the recording's drops.
"""

from __future__ import annotations

import argparse

import numpy as np

from gtop.recordings.reader import Recording


def holes(rec: Recording, min_calls: int, min_s: float) -> list[tuple[int, float, float, int]]:
    """``(pid, from_s, seconds, calls skipped)`` of each hole, in seconds from the start."""
    first, _ = rec.time_range()
    kernels = rec.read("kernel") if "kernel" in rec.streams else None
    out = []
    if kernels is None or not len(kernels):
        return out
    for pid in np.unique(kernels["pid"]):
        rows = kernels[kernels["pid"] == pid]
        rows = rows[np.argsort(rows["correlation"], kind="stable")]
        calls = np.diff(rows["correlation"].astype(np.int64))
        gap = np.diff(rows["t_ns"]) / 1e9
        for i in np.flatnonzero((calls > min_calls) & (gap > min_s)):
            out.append((int(pid), (rows["t_ns"][i] - first) / 1e9, float(gap[i]), int(calls[i])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--min-calls", type=int, default=1500)
    ap.add_argument("--min-s", type=float, default=0.03)
    args = ap.parse_args()
    with Recording(args.file) as rec:
        found = holes(rec, args.min_calls, args.min_s)
        untraced = len(rec.read("untraced")) if "untraced" in rec.streams else 0
        drops = rec.meta.get("drops")
        print(f"{args.file}: {len(found)} holes; untraced rows {untraced}; drops {drops}")
    print("| pid | from (s) | seconds | launch calls skipped |\n|---|---|---|---|")
    for pid, t, s, calls in found:
        print(f"| {pid} | {t:.3f} | {s:.3f} | {calls} |")


if __name__ == "__main__":
    main()
