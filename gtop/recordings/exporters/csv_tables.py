"""CSV: one file per stream in a directory (``OUT/<stream>.csv``), every field a column."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from gtop.recordings.reader import Recording

FORMAT = "csv"
DESCRIPTION = "one CSV file per stream, in the directory OUT"


def _cell(value: object) -> object:
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return ""
    return value.item() if isinstance(value, np.generic) else value


def export(rec: Recording, out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for name, dtype in rec.streams.items():
        with open(out / f"{name}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(dtype.names)
            for rows in rec.iter_chunks(name):
                for row in rows.tolist():
                    writer.writerow([_cell(v) for v in row])
                total += len(rows)
    return f"wrote {total} rows of {len(rec.streams)} streams to {out}/"
