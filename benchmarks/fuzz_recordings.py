"""Damaged copies of the real recordings through ``gtop report`` and ``gtop export``.

Each variant is one kind of damage (``tests/fuzz/damage.py``: truncation, bit flips in
pages, in the chunk index and in chunk payloads, zeroed pages, NULLs and wrong types,
odd metadata, entities and layouts, out-of-range records with valid checksums, zstd
bombs) to one recording of at most ``--max-mb``. Each runs ``gtop report --json`` and
one ``gtop export`` (the formats in turn) in a forked child under ``--limit-gib`` of
address space and a 30 s alarm. Prints, per kind of damage and in all: commands run,
clean errors (non-zero exit, one ``gtop:`` line), salvaged successes (exit 0, the
damage found and named), successes where the damage touched nothing read, tracebacks,
hangs, slowest run and largest RSS; then each intact recording's own report RSS.

    python3 benchmarks/fuzz_recordings.py --variants 1000
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gtop.recordings.exporters import FORMATS  # noqa: E402
from tests.fuzz.damage import KINDS, Variant, variants  # noqa: E402
from tests.fuzz.runner import GIB, Outcome, run_all  # noqa: E402

COLUMNS = ("runs", "clean errors", "salvaged", "untouched", "tracebacks", "hangs", "max s")


@dataclass
class Job:
    variant: Variant
    argv: list[str]
    folder: Path
    siblings: int


def jobs(bases: list[Path], folder: Path, count: int, seed: int) -> Iterator[tuple[Job, list]]:
    formats = sorted(FORMATS)
    for i, variant in enumerate(variants(bases, count, seed)):
        own = folder / str(i)
        own.mkdir()
        path = own / "damaged.gtop"
        variant.make(path)
        fmt = formats[i % len(formats)]
        argvs = [
            ["report", "--json", str(path)],
            ["export", str(path), "--format", fmt, "-o", str(own / f"out.{fmt}")],
        ]
        for argv in argvs:
            yield Job(variant, argv, own, len(argvs)), argv


def verdict(job: Job, outcome: Outcome) -> str:
    if outcome.hang:
        return "hangs"
    if outcome.traceback or not outcome.clean:
        return "tracebacks"
    if outcome.status:
        return "clean errors"
    if job.argv[0] == "report":
        damaged = bool(json.loads(outcome.stdout).get("problems"))
    else:
        damaged = "is damaged" in outcome.output
    return "salvaged" if damaged else "untouched"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--max-mb", type=float, default=2.5)
    parser.add_argument("--limit-gib", type=float, default=1.0)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    limit = int(args.limit_gib * GIB)
    bases = sorted(
        p for p in (REPO / "recordings").glob("*.gtop") if p.stat().st_size <= args.max_mb * 1e6
    )
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    slowest: dict[str, float] = collections.defaultdict(float)
    max_rss, worst = 0.0, []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        done: collections.Counter = collections.Counter()
        stream = jobs(bases, Path(tmp), args.variants, args.seed)
        for job, outcome in run_all(stream, args.parallel, limit):
            kind = job.variant.kind
            what = verdict(job, outcome)
            table[kind]["runs"] += 1
            table[kind][what] += 1
            slowest[kind] = max(slowest[kind], outcome.wall_s)
            max_rss = max(max_rss, outcome.max_rss_mib)
            if what in ("tracebacks", "hangs"):
                worst.append(f"{job.variant} {job.argv[0]}: {outcome.output.strip()[-300:]}")
            done[job.folder] += 1
            if done[job.folder] == job.siblings:
                shutil.rmtree(job.folder)
        baseline = list(run_all(((b, ["report", "--json", str(b)]) for b in bases), 1, limit))
    elapsed = time.monotonic() - started

    print(
        f"{args.variants} variants of {len(bases)} recordings (≤ {args.max_mb} MB), seed "
        f"{args.seed}, {args.parallel} at a time under {args.limit_gib} GiB, {elapsed:.0f} s"
    )
    print()
    print("| damage | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    total: collections.Counter = collections.Counter()
    for kind in KINDS:
        row = table[kind]
        total.update(row)
        cells = [str(row[c]) for c in COLUMNS[:-1]] + [f"{slowest[kind]:.1f}"]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    cells = [str(total[c]) for c in COLUMNS[:-1]] + [f"{max(slowest.values()):.1f}"]
    print("| **all** | " + " | ".join(f"**{c}**" for c in cells) + " |")
    print()
    print(f"largest RSS of any damaged run: {max_rss:.0f} MiB")
    print()
    print("| intact recording | MB | report RSS MiB | report s |")
    print("|---|---|---|---|")
    for base, outcome in baseline:
        size = base.stat().st_size / 1e6
        print(f"| {base.name} | {size:.2f} | {outcome.max_rss_mib:.0f} | {outcome.wall_s:.2f} |")
    for line in worst[:20]:
        print("BAD", line)
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())
