"""Entity chunks (format 2): a batch of entities ↔ one compressed blob.

Stacks are most of a recording's entities, and each repeats frame strings that hundreds
of others hold too. A chunk therefore stores every top-level list-of-strings field of an
entity's value (a stack's ``frames``, a process's ``cmdline``, ...) as ids into one
string table that grows over the recording: each chunk carries only the strings that
are new in it, numbered on from the ones before (``base``). Any other field is stored as
it is, so a field added to stacks later (line numbers, say) needs no format change.

The payload is JSON, ``{"strings": [...], "rows": [[kind, key, t_ns, value, interned],
...]}`` (``interned``: the names of the value's fields held as ids), compressed with
zstd; its CRC-32 is checked on read. A lost chunk loses its rows, and the rows of later
chunks that use its strings.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

import zstandard

from gtop.core.hub import Entity
from gtop.recordings.codec import ChunkError, inflate

LEVEL = 9
"""zstd level of entity chunks: 15% smaller than level 3, for 5 ms per 100 KB of
entities (they come a few KB per second after start-up)."""
MAX_ROWS = 4096
"""Entities per chunk at most (writers split bigger batches)."""
MAX_PAYLOAD_BYTES = 64 << 20
"""Largest decompressed chunk read (4096 entities of the largest value a reader takes)."""


@dataclass(frozen=True)
class EntityChunk:
    """One encoded chunk: its string ids start at ``base``, it holds ``n`` entities."""

    base: int
    n: int
    crc: int
    data: bytes


def from_row(fields: list[Any]) -> EntityChunk:
    """A chunk from its table row ``(base, n, crc, data)``.

    Raises:
        ChunkError: a field has the wrong type or is out of range.
    """
    base, n, crc, data = fields
    if not all(type(v) is int and 0 <= v < 1 << 32 for v in (base, n, crc)):
        raise ChunkError("index fields damaged")
    if type(data) is not bytes or n > MAX_ROWS:
        raise ChunkError("data missing or too many rows")
    return EntityChunk(base, n, crc, data)


def _interned_fields(value: dict[str, Any]) -> list[str]:
    return [
        name
        for name, field in value.items()
        if type(field) is list and field and all(type(item) is str for item in field)
    ]


def encode(
    entities: list[Entity], strings: dict[str, int], level: int = LEVEL
) -> tuple[EntityChunk, list[str]]:
    """Encode ``entities`` against the string table ``strings`` (text → id; not changed).

    Returns:
        The chunk and the strings it adds, in id order from ``len(strings)`` (add them to
        the table once the chunk is stored).
    """
    base = len(strings)
    new: dict[str, int] = {}

    def intern(text: str) -> int:
        found = strings.get(text)
        if found is None:
            found = new.setdefault(text, base + len(new))
        return found

    rows = []
    for e in entities:
        fields = _interned_fields(e.value)
        value = {**e.value, **{name: [intern(s) for s in e.value[name]] for name in fields}}
        rows.append([e.kind, e.key, e.t_ns, value, fields])
    payload = json.dumps({"strings": list(new), "rows": rows}, separators=(",", ":")).encode()
    blob = zstandard.ZstdCompressor(level=level).compress(payload)
    return EntityChunk(base, len(rows), zlib.crc32(payload), blob), list(new)


def decode(chunk: EntityChunk, strings: dict[int, str]) -> list[list[Any]]:
    """The chunk's rows, ``[kind, key, t_ns, value, interned]`` as stored (see
    :func:`restore`); its new strings are added to ``strings`` (id → text).

    Raises:
        ChunkError: the blob is corrupt, truncated or not a chunk of ``chunk.n`` rows.
    """
    payload = inflate(chunk.data, MAX_PAYLOAD_BYTES)
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ChunkError("entity chunk too large")
    if zlib.crc32(payload) != chunk.crc:
        raise ChunkError("entity chunk checksum mismatch")
    try:
        body = json.loads(payload)
    except (ValueError, RecursionError) as exc:
        raise ChunkError(f"entity chunk is not JSON ({str(exc)[:60]})") from None
    if (
        type(body) is not dict
        or type(body.get("strings")) is not list
        or type(body.get("rows")) is not list
        or len(body["rows"]) != chunk.n
        or not all(type(s) is str for s in body["strings"])
    ):
        raise ChunkError("entity chunk has no strings and rows")
    for i, text in enumerate(body["strings"]):
        strings[chunk.base + i] = text
    return body["rows"]


def restore(row: Any, strings: dict[int, str]) -> tuple[Any, Any, Any, Any]:
    """A stored row as ``(kind, key, t_ns, value)``, its interned fields as strings again
    (the rest is checked as any entity is, by :func:`~gtop.recordings.validate.check_entity`).

    Raises:
        ChunkError: the row is malformed or uses a string that was lost.
    """
    if type(row) is not list or len(row) != 5:
        raise ChunkError("malformed entity row")
    kind, key, t_ns, value, fields = row
    if fields and (type(fields) is not list or type(value) is not dict):
        raise ChunkError("malformed interned fields")
    for name in fields or ():
        ids = value.get(name) if type(name) is str else None
        if type(ids) is not list:
            raise ChunkError(f"interned field {str(name)[:40]!r} missing")
        try:
            value[name] = [strings[i] for i in ids]
        except (KeyError, TypeError):
            raise ChunkError(f"{str(name)[:40]} uses a string that was lost") from None
    return kind, key, t_ns, value
