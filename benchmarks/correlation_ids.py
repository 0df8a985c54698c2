"""Do CUPTI's correlation ids stay unique under kernel sampling? Per traced phase of each
recording (between the agent's off phases): its kernel and copy records, how many
distinct correlation ids they carry, and the ids' range. In
``recordings/sampling/eager-decode.gtop`` (H200) every record after the first off phase
carries one id; in ``decode-10s.gtop``, recorded minutes later, the ids stay unique.

    PYTHONPATH=$PWD python3 benchmarks/correlation_ids.py FILE.gtop...
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gtop.analysis.attribution import untraced
from gtop.analysis.attribution.records import Records
from gtop.recordings.reader import Recording


def phases(path: Path) -> list[str]:
    """One table row per traced phase of the recording's process(es)."""
    with Recording(path) as rec:
        r0, r1 = rec.time_range()
        data = {
            n: rec.read(n) for n in ("kernel", "memcpy", "memset", "untraced") if n in rec.streams
        }
    records = Records.from_streams({k: v for k, v in data.items() if len(v)})
    ops = records.ops
    rows = []
    for pid, off in sorted(untraced.spans_by_pid(records.untraced, r1 + 1).items()):
        mine = ops[ops["pid"] == pid]
        edges = np.concatenate(([r0], off.ends, [r1 + 1]))
        stops = np.concatenate((off.starts, [r1 + 1]))
        for k, (a, b) in enumerate(zip(edges[:-1].tolist(), stops.tolist(), strict=True)):
            part = mine[(mine["t"] >= a) & (mine["t"] < b)]
            if not len(part):
                continue
            corr = part["corr"].astype(np.int64)
            rows.append(
                f"| {path.name} | {pid} | {k} | {(a - r0) / 1e9:.2f}-{(b - r0) / 1e9:.2f} s "
                f"| {len(part):,} | {len(np.unique(corr)):,} | {corr.min()}-{corr.max()} |"
            )
    if not rows:
        rows.append(f"| {path.name} | - | - | never sampled | {len(ops):,} | - | - |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args()
    print("| recording | pid | phase | traced | records | distinct ids | ids |")
    print("|---|---|---|---|---|---|---|")
    for path in args.files:
        for row in phases(path):
            print(row)


if __name__ == "__main__":
    main()
