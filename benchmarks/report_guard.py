"""A guard on `gtop report`'s cost: fails loudly when it regresses.

On a synthetic recording (``attribution_speed.synthetic``: a launch-heavy loop,
``--seconds`` long at ``--kernels`` kernels/s, no API records: the default agent mode),
it checks two things:

* **one read**: every chunk of every stream is decoded once by a report (the reader's
  ``decoded`` counts against its chunk index); exact, so it cannot be noise;
* **CPU time**, as a ratio: the report's CPU time (in this process, best of
  ``--rounds``) over a fixed numpy reference computation's, timed alternately in the same
  run, so that a loaded or slower machine moves both. The ratio is compared with the
  baseline stored in ``benchmarks/report_guard.json``; above ``tolerance`` times it, the
  guard fails (a 2.4x regression went unseen once; on this 60 s recording it read
  1.6x, and the ratio moved by ~10% between runs on a loaded 2-core VM).

``--update`` stores the ratio measured as the new baseline (after a change that is meant
to cost more, or less). Exit status 1 on a failure, with a line starting
``REPORT GUARD FAILED``.

Run: ``PYTHONPATH=. python benchmarks/report_guard.py [--seconds 60] [--update]`` (``.ci/run``
runs it; ~15 s).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attribution_speed import NS, synthetic, write_recording

from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report

BASELINE = Path(__file__).with_name("report_guard.json")


def reference() -> None:
    """A fixed computation of the kinds a report does (sorting, searching, counting,
    gathering rows) on 500k values."""
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 1 << 40, 500_000)
    order = np.argsort(keys, kind="stable")
    ranks = np.searchsorted(keys[order], keys)
    np.bincount(ranks % 4096, weights=keys.astype(np.float64))
    np.cumsum(keys[order] - keys[order][0])


def cpu(fn) -> float:
    c = time.process_time()
    fn()
    return time.process_time() - c


def one_read(path: Path) -> list[str]:
    """The streams whose chunks a report decoded more than once (name: decoded/chunks)."""
    with Recording(path) as rec:
        read_report(rec)
        chunks = {s: len(rec.chunks(s)) for s in rec.streams}
        return [f"{s}: {n}/{chunks[s]}" for s, n in rec.decoded.items() if n > chunks[s]]


def measure(path: Path, rounds: int) -> tuple[float, float]:
    """Best CPU seconds of the report and of the reference, timed alternately."""
    report = ref = float("inf")
    for _ in range(rounds):
        ref = min(ref, cpu(reference))
        with Recording(path) as rec:
            report = min(report, cpu(lambda rec=rec: read_report(rec)))
    return report, ref


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="synthetic recording length")
    ap.add_argument("--kernels", type=int, default=20_000, help="kernels per second")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds (the best counts)")
    ap.add_argument("--update", action="store_true", help="store the ratio as the baseline")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "guard.gtop"
        write_recording(path, synthetic(10 * NS, args.seconds, args.kernels, api_records=False))
        repeated = one_read(path)
        report, ref = measure(path, args.rounds)
    ratio = report / ref
    key = f"{args.seconds:g}s@{args.kernels}"
    stored = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    base = stored.get("ratios", {}).get(key)
    tolerance = float(stored.get("tolerance", 1.35))
    rows = [
        ("recording", f"{args.seconds:g} s at {args.kernels:,} kernels/s, no API records"),
        ("report CPU (best)", f"{report:.3f} s"),
        ("reference CPU (best)", f"{ref:.3f} s"),
        ("ratio", f"{ratio:.2f} (baseline {base if base is None else f'{base:.2f}'})"),
        ("chunks decoded twice", ", ".join(repeated) or "none"),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if args.update:
        stored.setdefault("ratios", {})[key] = round(ratio, 3)
        stored["tolerance"] = tolerance
        BASELINE.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"baseline for {key} stored in {BASELINE.name}")
    failures = []
    if repeated:
        failures.append(f"a report decoded chunks more than once ({', '.join(repeated)})")
    if base is not None and ratio > base * tolerance and not args.update:
        failures.append(
            f"report/reference CPU ratio {ratio:.2f} is over {tolerance:g}x the baseline "
            f"{base:.2f}: gtop report got slower (or rerun with --update if meant)"
        )
    for failure in failures:
        print(f"REPORT GUARD FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
