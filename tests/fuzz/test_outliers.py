"""Semantic damage: one row's value set to an extreme in every numeric column of every
stream (checksums valid, as a buggy or hostile writer leaves them), on small real
recordings; ``report`` and ``replay --once`` each exit 0 or print one ``gtop:`` line,
in forked children under 4 GiB and 30 CPU seconds."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from gtop.recordings import codec
from gtop.recordings.schema import dtype_from_json
from tests.conftest import RECORDINGS
from tests.fuzz.runner import GIB, run_all

BASES = {RECORDINGS / "train_loop_nvml.gtop": True, RECORDINGS / "loader-1-worker.gtop": False}
"""Small real recordings (NVML and host; CUPTI with API calls, kernels, memcpy, memset,
stacks and thread states: every stream gtop records but probes'), and whether each takes
every extreme and both commands (True) or the first extreme and ``report`` only (a
2-core machine's time: its 114 columns at ~0.3 s a report)."""


def extremes(kind: str, dtype: np.dtype) -> list[object]:
    if kind in "iu":
        info = np.iinfo(dtype)
        return [info.max, info.min]
    return [np.nan, -np.inf, 1e300 if dtype.itemsize == 8 else 3e38]


def columns(path: Path, every: bool) -> Iterator[tuple[str, str, object]]:
    """(stream, field, value) for every numeric field of every stream in ``path``: each
    extreme value, or (not ``every``) the first."""
    with sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True) as db:
        layouts = db.execute("SELECT name, dtype FROM streams").fetchall()
    db.close()
    for stream, text in layouts:
        dtype = dtype_from_json(text)
        for field in dtype.names or ():
            sub = dtype[field]
            if sub.shape == () and sub.kind in "iuf":
                for value in extremes(sub.kind, sub)[: None if every else 1]:
                    yield stream, field, value


def outlier(base: Path, out: Path, stream: str, field: str, value: object) -> None:
    """``base`` copied to ``out`` with ``field`` of one row of ``stream``'s first chunk set
    to ``value``, its checksum and index made to match."""
    shutil.copyfile(base, out)
    with sqlite3.connect(out) as db:
        (text,) = db.execute("SELECT dtype FROM streams WHERE name = ?", (stream,)).fetchone()
        row = db.execute(
            "SELECT id, n, crc, data FROM chunks WHERE stream = ? ORDER BY id LIMIT 1", (stream,)
        ).fetchone()
        if row is None:
            return
        chunk_id, n, crc, blob = row
        records = codec.decode(blob, dtype_from_json(text), n, crc)
        records[field][n // 2] = value
        blob, crc = codec.encode(records)
        t = records["t_ns"]
        db.execute(
            "UPDATE chunks SET data = ?, crc = ?, t_first = ?, t_last = ? WHERE id = ?",
            (blob, crc, int(t.min()), int(t.max()), chunk_id),
        )
    db.close()


@pytest.mark.parametrize("base", BASES, ids=lambda p: p.stem)
def test_an_outlier_in_any_column_gives_a_report_or_one_line(tmp_path: Path, base: Path) -> None:
    every = BASES[base]
    jobs = []
    for i, (stream, field, value) in enumerate(columns(base, every)):
        path = tmp_path / f"{i}.gtop"
        outlier(base, path, stream, field, value)
        what = f"{stream}.{field} = {value}"
        jobs.append((f"report: {what}", ["report", str(path)]))
        if every:
            jobs.append((f"replay --once: {what}", ["replay", str(path), "--once"]))
    assert len(jobs) > 40
    failures = []
    for what, outcome in run_all(jobs, parallel=2, limit_bytes=4 * GIB, timeout_s=30):
        if not outcome.clean or outcome.cpu_s > 30:
            tail = " | ".join(outcome.output.strip().splitlines()[-3:])
            failures.append(f"{what}: exit {outcome.status}: {tail[:300]}")
    assert not failures, f"{len(failures)} of {len(jobs)}:\n" + "\n".join(failures[:20])
