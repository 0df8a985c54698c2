"""The damage issue 14 found, one case each, on a real recording: what is read back."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from pathlib import Path

import numpy as np
import pytest
import zstandard

from gtop.recordings import codec
from gtop.recordings.reader import Recording
from gtop.recordings.schema import dtype_from_json
from tests.conftest import RECORDINGS
from tests.fuzz.damage import rewrite_entities
from tests.fuzz.runner import run_gtop

SOURCE = RECORDINGS / "loader-1-worker.gtop"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    path = tmp_path / "r.gtop"
    shutil.copyfile(SOURCE, path)
    return path


def intact() -> tuple[tuple[int, int], dict[str, int]]:
    with Recording(SOURCE) as rec:
        return rec.time_range(), {s: len(rec.read(s)) for s in rec.streams}


def edit(path: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, args)
    db.close()


def last_chunk(path: Path, stream: str) -> tuple[int, int, int, int, bytes, np.dtype]:
    with sqlite3.connect(path) as db:
        (layout,) = db.execute("SELECT dtype FROM streams WHERE name = ?", (stream,)).fetchone()
        row = db.execute(
            "SELECT id, t_last, n, crc, data FROM chunks WHERE stream = ? ORDER BY t_first DESC",
            (stream,),
        ).fetchone()
    db.close()
    return (*row, dtype_from_json(layout))


def test_a_flipped_bit_in_the_index_does_not_stretch_the_time_range(copy: Path) -> None:
    """One bit of ``chunks.t_last`` made report run for minutes: the range now comes
    from the chunk's checksummed data."""
    chunk_id, t_last, *_ = last_chunk(copy, "kernel")
    edit(copy, "UPDATE chunks SET t_last = ? WHERE id = ?", t_last ^ (1 << 55), chunk_id)
    outcome = run_gtop(["report", str(copy)], timeout_s=30)
    assert outcome.status == 0 and outcome.cpu_s < 30, outcome.output
    with Recording(copy) as rec:
        assert (rec.time_range(), {s: len(rec.read(s)) for s in rec.streams}) == intact()
        assert any("index times disagree" in p for p in rec.problems)


def test_records_far_from_the_rest_are_left_out(copy: Path) -> None:
    """A chunk whose records (checksum and index consistent) lie centuries away."""
    chunk_id, _, n, crc, blob, dtype = last_chunk(copy, "thread_state")
    rows = codec.decode(blob, dtype, n, crc)
    rows["t_ns"][-1] = np.iinfo(np.int64).max // 2
    blob, crc = codec.encode(rows)
    edit(
        copy,
        "UPDATE chunks SET data = ?, crc = ?, t_last = ? WHERE id = ?",
        blob,
        crc,
        int(rows["t_ns"].max()),
        chunk_id,
    )
    (t0, t1), counts = intact()
    with Recording(copy) as rec:
        assert rec.time_range()[0] == t0 and rec.time_range()[1] <= t1
        assert len(rec.read("thread_state")) == counts["thread_state"] - n
        assert any("far from the rest" in p for p in rec.problems)


def test_a_zstd_bomb_is_not_inflated(copy: Path) -> None:
    payload = bytes(1 << 28)  # 256 MiB of zeros in a 8 KiB frame
    bomb, crc = zstandard.ZstdCompressor(level=19).compress(payload), zlib.crc32(payload)
    del payload  # not held through the rest of the test
    chunk_id, *_ = last_chunk(copy, "kernel")
    edit(copy, "UPDATE chunks SET data = ?, crc = ? WHERE id = ?", bomb, crc, chunk_id)
    outcome = run_gtop(["report", str(copy)], limit_bytes=1 << 30)
    assert outcome.status == 0, outcome.output
    grown = outcome.max_rss_mib - outcome.start_rss_mib  # its peak starts at its parent's
    assert grown < 200, (outcome.max_rss_mib, outcome.start_rss_mib)
    with Recording(copy) as rec:
        rec.read("kernel")
        assert any(f"chunk {chunk_id}" in p and "declares" in p for p in rec.problems)


@pytest.mark.parametrize(
    "value",
    ["[" * 100_000 + "]" * 100_000, '{"a": ', "NaN", json.dumps({"x": "y" * 2_000_000})],
)
def test_odd_metadata_json_is_named_and_skipped(copy: Path, value: str) -> None:
    edit(copy, "UPDATE meta SET value = ? WHERE key = 'devices'", value)
    with Recording(copy) as rec:
        assert "devices" not in rec.meta
        assert any("'devices' damaged" in p for p in rec.problems)
    assert run_gtop(["report", str(copy)]).status == 0


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("stack", {"frames": 7}),
        ("stack", {"frames": ["f (a.py)", "g (b.py)"], "kinds": "p"}),
        ("kernel_name", {"pid": 1}),
        ("process", {"pid": "x"}),
        ("device", [1, 2]),
    ],
)
def test_entities_of_the_wrong_shape_are_left_out(copy: Path, kind: str, value: object) -> None:

    def change(rows: list[list]) -> None:
        for row in rows:
            if row[0] == kind:
                row[3:] = [value, []]

    rewrite_entities(copy, change)
    with Recording(copy) as rec:
        assert rec.entities(kind) == []
        assert any(p.startswith(f"entity {kind}/") for p in rec.problems)
        assert f"entity {kind}/" in (rec.damage() or "")
    assert run_gtop(["report", str(copy)]).status == 0


@pytest.mark.parametrize("column", ["t_first", "n", "crc", "stream"])
def test_null_and_wrong_types_in_the_index_lose_one_chunk(copy: Path, column: str) -> None:
    with sqlite3.connect(copy) as db:  # what a careless writer leaves: no NOT NULL
        db.execute("PRAGMA writable_schema=ON")
        db.execute("UPDATE sqlite_master SET sql = replace(sql, ' NOT NULL', '')")
    db.close()
    chunk_id, _, n, *_ = last_chunk(copy, "thread_state")
    edit(copy, f"UPDATE chunks SET {column} = NULL WHERE id = ?", chunk_id)
    _, counts = intact()
    with Recording(copy) as rec:
        assert len(rec.read("thread_state")) == counts["thread_state"] - n
        assert any(f"chunk {chunk_id} left out" in p for p in rec.problems)


def test_a_view_in_place_of_the_index_is_refused(copy: Path) -> None:
    """A recursive view named ``chunks`` made every command hang at 1.5 GB (issue 28)."""
    with sqlite3.connect(copy) as db:
        db.execute("ALTER TABLE chunks RENAME TO chunks_data")
        db.execute(
            "CREATE VIEW chunks AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 "
            "FROM r) SELECT id, 'kernel' AS stream, 0 AS t_first, 0 AS t_last, 1 AS n, "
            "0 AS crc, x'00' AS data FROM r"
        )
    db.close()
    for argv in (["report", str(copy)], ["replay", str(copy), "--once"]):
        outcome = run_gtop(argv, timeout_s=30)
        assert outcome.clean and outcome.status != 0 and outcome.cpu_s < 30, outcome.output
        assert "chunks is not a table" in outcome.output


def test_a_huge_thread_id_sizes_nothing(copy: Path) -> None:
    """``thread_state.tid = 2**31-1`` in every chunk, checksums valid: report allocated
    16 GiB (a bincount over the raw tid)."""
    with sqlite3.connect(copy) as db:
        (layout,) = db.execute("SELECT dtype FROM streams WHERE name = 'thread_state'").fetchone()
        dtype = dtype_from_json(layout)
        for chunk_id, n, crc, blob in db.execute(
            "SELECT id, n, crc, data FROM chunks WHERE stream = 'thread_state'"
        ).fetchall():
            rows = codec.decode(blob, dtype, n, crc)
            rows["tid"][0] = 2**31 - 1
            blob, crc = codec.encode(rows)
            db.execute("UPDATE chunks SET data = ?, crc = ? WHERE id = ?", (blob, crc, chunk_id))
    db.close()
    outcome = run_gtop(["report", str(copy)], limit_bytes=1 << 30)
    assert outcome.status == 0, outcome.output
