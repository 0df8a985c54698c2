"""Where a recording's bytes go: per stream (compressed chunks), entities, and the rest
(SQLite pages, the index), summed over ``.gtop`` files (format 1 or 2).

    python benchmarks/recording_sizes.py [DIR_OR_FILE ...]   (default: recordings/, gtop/demo/)

Prints one Markdown table: bytes and bytes per row of each stream, the entities' share
of the files, and bytes per kernel record, of the kernel stream and of whole files.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def files(paths: list[Path]) -> list[Path]:
    out: set[Path] = set()
    for path in paths:
        found = path.rglob("*.gtop") if path.is_dir() else [path]
        out.update(p.resolve() for p in found)  # a link and its target count once
    return sorted(out)


def measure(path: Path, sizes: Counter, rows: Counter) -> None:
    """Add one file's bytes (and rows) per stream, entities and file to the counters."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    sql = "SELECT stream, SUM(n), SUM(LENGTH(data)) FROM chunks GROUP BY stream"
    for stream, n, b in db.execute(sql):
        sizes[stream] += b
        rows[stream] += n
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    if "entity_chunks" in tables:
        sizes[" entities"] += (
            db.execute("SELECT SUM(LENGTH(data)) FROM entity_chunks").fetchone()[0] or 0
        )
    if "entities" in tables:
        sql = "SELECT SUM(LENGTH(kind) + LENGTH(key) + LENGTH(value) + 8) FROM entities"
        sizes[" entities"] += db.execute(sql).fetchone()[0] or 0
    db.close()
    sizes[" file"] += os.path.getsize(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "paths", nargs="*", type=Path, default=[ROOT / "recordings", ROOT / "gtop" / "demo"]
    )
    args = parser.parse_args()
    sizes, rows = Counter(), Counter()
    found = files(args.paths)
    for path in found:
        measure(path, sizes, rows)
    total = sizes[" file"]
    print(f"{len(found)} files, {total:,} bytes\n")
    print("| part | bytes | share | rows | bytes/row |\n|---|---|---|---|---|")
    streams = sorted((s for s in sizes if not s.startswith(" ")), key=lambda s: -sizes[s])
    other = total - sum(sizes[s] for s in streams) - sizes[" entities"]
    for name, b in [
        *((s, sizes[s]) for s in streams),
        ("entities", sizes[" entities"]),
        ("SQLite pages, index", other),
    ]:
        n = rows.get(name, 0)
        per = f"{b / n:.2f}" if n else ""
        print(f"| {name} | {b:,} | {b / total:.1%} | {n:,} | {per} |")
    kernels = rows["kernel"]
    if kernels:
        print(
            f"\nkernel stream: {sizes['kernel'] / kernels:.2f} bytes/kernel record; "
            f"whole files: {total / kernels:.2f} bytes per kernel record"
        )


if __name__ == "__main__":
    main()
