"""Damaged copies of real recordings, each made deterministically from a seed.

Byte-level damage (truncation, bit flips in pages, in chunk payloads, zeroed pages) is
what a bad copy or disk does; SQL-level damage (a flipped bit in the un-checksummed chunk
index, NULLs, wrong types, huge values, unknown names, malformed or deeply nested JSON,
records with out-of-range values that still pass their checksum) is what a buggy or
hostile writer does. Every kind is a small function ``(rng, path) -> description``
that damages ``path`` in place.
"""

from __future__ import annotations

import functools
import json
import random
import shutil
import sqlite3
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zstandard

from gtop.recordings import codec
from gtop.recordings.schema import dtype_from_json

PAGE = 4096


def _page_size(data: bytes | bytearray) -> int:
    size = int.from_bytes(data[16:18], "big")
    return 65536 if size == 1 else (size if size >= 512 else PAGE)


def truncate(rng: random.Random, path: Path) -> str:
    size = path.stat().st_size
    keep = int(size * rng.choice([rng.uniform(0.0, 0.2), rng.uniform(0.2, 1.0)]))
    if rng.random() < 0.5:  # on a page boundary, as a copy stopped between writes is
        keep -= keep % PAGE
    with open(path, "r+b") as f:
        f.truncate(keep)
    return f"truncated to {keep} of {size} bytes"


def flip_bits(rng: random.Random, path: Path) -> str:
    data = bytearray(path.read_bytes())
    flips = rng.choice([1, 1, 2, 8, 64])
    for _ in range(flips):
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return f"{flips} random bit flips"


def zero_pages(rng: random.Random, path: Path) -> str:
    data = bytearray(path.read_bytes())
    page = _page_size(data)
    pages = len(data) // page
    chosen = sorted(rng.sample(range(pages), min(pages, rng.choice([1, 1, 2, 4]))))
    for p in chosen:
        data[p * page : (p + 1) * page] = bytes(page)
    path.write_bytes(bytes(data))
    return f"zeroed pages {chosen}"


def _blob_offsets(path: Path, data: bytes) -> list[tuple[int, int]]:
    """Where each chunk's blob lies in the file (those stored in one piece)."""
    with sqlite3.connect(path) as db:
        blobs = [row[0] for row in db.execute("SELECT data FROM chunks")]
    out = []
    for blob in blobs:
        at = data.find(blob[:64])
        if at >= 0 and data[at : at + len(blob)] == blob:
            out.append((at, len(blob)))
    return out


def flip_payload(rng: random.Random, path: Path) -> str:
    data = bytearray(path.read_bytes())
    spans = _blob_offsets(path, bytes(data))
    if not spans:
        return flip_bits(rng, path)
    at, size = rng.choice(spans)
    where = rng.choice([rng.randrange(min(size, 16)), rng.randrange(size)])  # header or body
    data[at + where] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return f"bit flip at byte {where} of a {size}-byte chunk payload"


def _loosen(db: sqlite3.Connection) -> None:
    """Drop the NOT NULL constraints, so NULLs can be stored as a careless writer would."""
    db.execute("PRAGMA writable_schema=ON")
    db.execute("UPDATE sqlite_master SET sql = replace(sql, ' NOT NULL', '') WHERE type='table'")
    db.commit()


def _edit(path: Path, *statements: tuple[str, tuple]) -> None:
    with sqlite3.connect(path) as db:
        _loosen(db)
    with sqlite3.connect(path) as db:
        for sql, args in statements:
            db.execute(sql, args)
    db.close()


def _pick(path: Path, sql: str, rng: random.Random) -> tuple:
    with sqlite3.connect(path) as db:
        rows = db.execute(sql).fetchall()
    db.close()
    return rng.choice(rows) if rows else (None,)


def flip_index(rng: random.Random, path: Path) -> str:
    column = rng.choice(["t_first", "t_last", "t_last", "n", "crc", "id"])
    chunk_id, value = _pick(path, f"SELECT id, {column} FROM chunks", rng)
    bit = rng.choice([rng.randrange(64), rng.randrange(40, 63)])
    flipped = (value ^ (1 << bit)) & ((1 << 64) - 1)
    flipped -= (flipped >> 63) << 64  # back to a signed 64-bit integer
    sql = f"UPDATE OR IGNORE chunks SET {column} = ? WHERE id = ?"
    _edit(path, (sql, (flipped, chunk_id)))
    return f"chunk {chunk_id}: bit {bit} of {column} flipped"


ODD_VALUES: list[object] = [
    None,
    "x",
    "",
    b"\x00\xff",
    1e308,
    float("nan"),
    -1,
    0,
    2**63 - 1,
    -(2**63),
    10**12,
]


def odd_cell(rng: random.Random, path: Path) -> str:
    table, columns = rng.choice(
        [
            ("chunks", ["stream", "t_first", "t_last", "n", "crc", "data"]),
            ("entity_chunks", ["base", "n", "crc", "data"]),
            ("streams", ["name", "dtype"]),
            ("meta", ["value"]),
        ]
    )
    column = rng.choice(columns)
    value = rng.choice(ODD_VALUES)
    (rowid,) = _pick(path, f"SELECT rowid FROM {table}", rng)
    _edit(path, (f"UPDATE OR IGNORE {table} SET {column} = ? WHERE rowid = ?", (value, rowid)))
    return f"{table}.{column} of row {rowid} set to {value!r}"


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _odd_json(rng: random.Random) -> str:
    return rng.choice(
        [
            "{",
            '{"a": ',
            _nested(rng.choice([200, 5000, 200000])),
            '{"a":' * 50000 + "1" + "}" * 50000,
            "[]",
            "5",
            '"text"',
            "null",
            "1e999",
            "NaN",
            '{"name": 5, "frames": 7, "pid": "x", "mem_total": "big", "index": []}',
            json.dumps({"name": "x" * 1_000_000}),
            json.dumps(list(range(200_000))),
        ]
    )


META_KEYS = [
    "format",
    "format_version",
    "clock",
    "devices",
    "target",
    "interval_s",
    "t_start_ns",
    "t_end_ns",
    "drops",
    "rows",
    "closed",
]


def odd_meta(rng: random.Random, path: Path) -> str:
    key = rng.choice(META_KEYS)
    text = rng.choice(
        [
            _odd_json(rng),
            json.dumps(rng.choice([*ODD_VALUES[1:3], [], {}, 1e308, -5, 99, True])),
            json.dumps({"realtime_minus_monotonic_ns": "x", "a": [1]}),
            json.dumps({"cupti": "many", "x": 1e308}),
        ]
    )
    _edit(path, ("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, text)))
    return f"meta {key} = {text[:40]!r}..."


def rewrite_entities(path: Path, change: Callable[[list[list]], object]) -> None:
    """Apply ``change`` to the stored rows (``[kind, key, t_ns, value, interned]``) of
    every entity chunk, and store them again with a checksum that matches."""
    with sqlite3.connect(path) as db:
        for chunk_id, data in db.execute("SELECT id, data FROM entity_chunks").fetchall():
            body = json.loads(zstandard.ZstdDecompressor().decompress(data))
            change(body["rows"])
            payload = json.dumps(body).encode()
            blob = zstandard.ZstdCompressor().compress(payload)
            sql = "UPDATE entity_chunks SET data = ?, crc = ?, n = ? WHERE id = ?"
            db.execute(sql, (blob, zlib.crc32(payload), len(body["rows"]), chunk_id))
    db.close()


ODD_ENTITY_VALUES: list[object] = [
    [],
    5,
    "text",
    None,
    {"name": 5, "frames": 7, "pid": "x", "mem_total": "big", "index": []},
    {"name": "x" * 1_000_000},
    list(range(200_000)),
]


def odd_entity(rng: random.Random, path: Path) -> str:
    """One entity row no recorder writes, in a chunk whose checksum still matches."""
    (rows,) = _pick(path, "SELECT n FROM entity_chunks", rng)
    if not rows:
        return odd_meta(rng, path)
    at, field = rng.randrange(rows), rng.randrange(5)
    odd = [
        rng.choice(["no_such_kind", "stack", "thread", "process", "kernel_name", "device", 5]),
        rng.choice(["x", "", "-1", "99999999999999999999999", "1.5", " 3", None]),
        rng.choice([-1, 2**63 - 1, 1e300, "later"]),
        rng.choice(ODD_ENTITY_VALUES),
        rng.choice([["frames"], ["nothing"], "frames", [7]]),
    ][field]
    edited: list[str] = []

    def change(stored: list[list]) -> None:
        if at < len(stored) and not edited:
            edited.append(str(stored[at][0]))
            stored[at][field] = odd
            if field == 3:
                stored[at][4] = []

    rewrite_entities(path, change)
    return f"entity row {at} ({edited[:1]}): field {field} = {str(odd)[:40]!r}"


def odd_layout(rng: random.Random, path: Path) -> str:
    (name,) = _pick(path, "SELECT name FROM streams", rng)
    layout = rng.choice(
        [
            '"|O"',
            '"<V2000000000"',
            '[["t_ns", "<i8"], ["x", "<f8", [100000, 100000]]]',
            '[["t_ns", "<i8"], ["x", "(3,)i8,"]]',
            '[["t_ns", "<i8"], ["t_ns", "<i8"]]',
            '[["x", "<i8"]]',
            '[["t_ns", "<f4"]]',
            _nested(5000),
            '"<i8"',
            "[[1, 2]]",
        ]
    )
    _edit(path, ("UPDATE streams SET dtype = ? WHERE name = ?", (layout, name)))
    return f"stream {name} layout = {layout[:40]!r}"


def odd_records(rng: random.Random, path: Path) -> str:
    """Values no recorder writes, in a chunk whose checksum still matches."""
    with sqlite3.connect(path) as db:
        layouts = dict(db.execute("SELECT name, dtype FROM streams").fetchall())
        rows = db.execute("SELECT id, stream, n, crc, data FROM chunks").fetchall()
        chunk_id, stream, n, crc, blob = rng.choice(rows)
        dtype = dtype_from_json(layouts[stream])
        records = codec.decode(blob, dtype, n, crc)
        field = rng.choice(list(dtype.names))
        kind = dtype[field].kind
        if kind in "iu":
            info = np.iinfo(dtype[field])
            value = rng.choice([info.max, info.min, info.max // 2, 0])
        elif kind == "f":
            value = rng.choice([np.inf, -np.inf, np.nan, 1e38, -1.0])
        else:
            value = 0
        where = rng.choice([slice(None), slice(0, 1), slice(n - 1, n), slice(0, None, 7)])
        records[field][where] = value
        new_blob, new_crc = codec.encode(records)
        t = records["t_ns"]
        db.execute(
            "UPDATE chunks SET data = ?, crc = ?, t_first = ?, t_last = ? WHERE id = ?",
            (new_blob, new_crc, int(t.min()), int(t.max()), chunk_id),
        )
    db.close()
    return f"{stream} chunk {chunk_id}: {field}[{where}] = {value} (checksum valid)"


@functools.cache
def _zeros_compressed(size: int) -> tuple[bytes, int]:
    """``size`` zero bytes as one zstd frame, and their CRC-32: the same two sizes in
    every bomb, compressed once (0.3 s CPU each time at level 19)."""
    payload = bytes(size)
    return zstandard.ZstdCompressor(level=19).compress(payload), zlib.crc32(payload)


def zstd_bomb(rng: random.Random, path: Path) -> str:
    """A chunk whose payload inflates far beyond what its row count allows."""
    size = rng.choice([1 << 24, 1 << 28])
    blob, crc = _zeros_compressed(size)
    (chunk_id,) = _pick(path, "SELECT id FROM chunks", rng)
    n = rng.choice([None, 1 << 40])
    sql = "UPDATE chunks SET data = ?, crc = ?" + (", n = ?" if n else "") + " WHERE id = ?"
    args = (blob, crc, *([n] if n else []), chunk_id)
    _edit(path, (sql, args))
    return f"chunk {chunk_id}: a {len(blob)}-byte zstd frame of {size} bytes, n={n}"


KINDS: dict[str, Callable[[random.Random, Path], str]] = {
    "truncate": truncate,
    "flip_bits": flip_bits,
    "zero_pages": zero_pages,
    "flip_payload": flip_payload,
    "flip_index": flip_index,
    "odd_cell": odd_cell,
    "odd_meta": odd_meta,
    "odd_entity": odd_entity,
    "odd_layout": odd_layout,
    "odd_records": odd_records,
    "zstd_bomb": zstd_bomb,
}


@dataclass(frozen=True)
class Variant:
    base: Path
    kind: str
    seed: int

    def make(self, out: Path) -> str:
        """Write this damaged copy to ``out``; returns what was done to it."""
        shutil.copyfile(self.base, out)
        return KINDS[self.kind](random.Random(f"{self.base.name}/{self.kind}/{self.seed}"), out)

    def __str__(self) -> str:
        return f"{self.base.name}/{self.kind}/{self.seed}"


def variants(bases: list[Path], count: int, seed: int = 0) -> list[Variant]:
    """``count`` variants, every kind over every base in turn."""
    kinds = list(KINDS)
    return [
        Variant(bases[i % len(bases)], kinds[(i // len(bases)) % len(kinds)], seed * 1_000_003 + i)
        for i in range(count)
    ]
