"""Column-chunk codec: a batch of records ↔ one compressed blob.

A chunk stores each field as a contiguous column, every column byte-shuffled (all first
bytes, then all second bytes, …) so that zstd sees long runs of similar bytes. Before
that, integer columns are transformed so that their values are small:

- format 1: ``*_ns`` int64 columns are delta-encoded, the others are stored as they are;
- format 2: each integer column is stored as it is, as deltas, or (an int64 ``*_ns``
  column beside ``t_ns``) minus the row's ``t_ns`` (``end_ns`` becomes the duration):
  the encoder tries a few such plans for the whole chunk and keeps the smallest (a
  kernel's end as its duration, a thread state's end, the next state's start, as a
  delta); one byte per column ahead of the columns says which.

All transforms wrap around in the column's own type, so every value round-trips exactly.
The checksum is over the decompressed payload, so corruption anywhere is detected on read.
"""

from __future__ import annotations

import zlib

import numpy as np
import zstandard

from gtop.analysis import compiled
from gtop.recordings.schema import FORMAT_VERSION

ZSTD_LEVEL = 3
ARCHIVE_LEVEL = 19
"""zstd level of a recording rewritten to be kept (``tools/convert_recordings.py``):
6-7% smaller than level 3 on the committed CUPTI recordings, as fast to read, ~20×
slower to write."""

RAW, DELTA, FROM_START = 0, 1, 2
"""Format 2 column transforms: as is, differences, minus the row's ``t_ns``."""


class ChunkError(ValueError):
    """A chunk could not be decoded (corrupt or truncated data)."""


def _columns(dtype: np.dtype) -> list[tuple[str, np.dtype]]:
    return [(name, dtype[name]) for name in dtype.names or ()]


def _relative_to_start(name: str, dtype: np.dtype, records_dtype: np.dtype) -> bool:
    """Whether a column can be stored minus ``t_ns`` (an int64 time beside an int64 start)."""
    names = records_dtype.names or ()
    return (
        name != "t_ns"
        and name.endswith("_ns")
        and dtype == np.dtype("<i8")
        and "t_ns" in names
        and records_dtype["t_ns"] == np.dtype("<i8")
    )


def _shuffled(col: np.ndarray) -> bytes:
    """A column's bytes, all first bytes, then all second bytes, ..."""
    raw = np.ascontiguousarray(col).view(np.uint8).reshape(len(col), col.dtype.itemsize)
    return np.ascontiguousarray(raw.T).tobytes()


def _size(planes: bytes) -> int:
    """A column's compressed size at zstd's fastest level: which transform to keep."""
    return len(zstandard.ZstdCompressor(level=1).compress(planes))


def _delta(col: np.ndarray) -> np.ndarray:
    return np.diff(col, prepend=np.zeros(1, dtype=col.dtype))


def _best_alone(name: str, col: np.ndarray, records: np.ndarray) -> int:
    """The transform of one column that compresses best alone."""
    if col.dtype.kind not in "iu" or not len(col):
        return RAW
    options = [(RAW, col), (DELTA, _delta(col))]
    if _relative_to_start(name, col.dtype, records.dtype):
        options.append((FROM_START, col - records["t_ns"]))
    return min(options, key=lambda option: _size(_shuffled(option[1])))[0]


def _plans(records: np.ndarray) -> list[list[int]]:
    """Transforms to try for a whole chunk: format 1's rule (deltas of times), that rule
    with times after ``t_ns`` relative to it, and each column's best alone (zstd also
    finds what columns share: a thread state's end is the next one's start)."""
    columns = _columns(records.dtype)
    times = _v1_codes(columns)
    relative = [
        FROM_START if _relative_to_start(name, ftype, records.dtype) else code
        for (name, ftype), code in zip(columns, times)
    ]
    alone = [_best_alone(name, records[name], records) for name, _ in columns]
    return [times, relative, alone]


def _payload(records: np.ndarray, codes: list[int]) -> bytes:
    parts = [bytes(codes)]
    for (name, _), code in zip(_columns(records.dtype), codes):
        col = np.ascontiguousarray(records[name])
        if code == DELTA:
            col = _delta(col)
        elif code == FROM_START:
            col = col - records["t_ns"]
        parts.append(_shuffled(col))
    return b"".join(parts)


def encode(records: np.ndarray, level: int = ZSTD_LEVEL) -> tuple[bytes, int]:
    """Encode a record array in the current format (zstd ``level``), with whichever of
    :func:`_plans` compresses smallest (at :data:`ZSTD_LEVEL` or ``level``, the lower).

    Returns:
        ``(blob, crc)``: the compressed chunk and the CRC-32 of its decoded payload.
    """
    judge = zstandard.ZstdCompressor(level=min(level, ZSTD_LEVEL))
    best: tuple[bytes, bytes] | None = None
    for codes in _plans(records) if len(records) else [[RAW] * len(_columns(records.dtype))]:
        payload = _payload(records, codes)
        blob = judge.compress(payload)
        if best is None or len(blob) < len(best[0]):
            best = (blob, payload)
    blob, payload = best
    if level > ZSTD_LEVEL:
        blob = zstandard.ZstdCompressor(level=level).compress(payload)
    return blob, zlib.crc32(payload)


def decode(
    blob: bytes,
    dtype: np.dtype,
    n: int,
    crc: int,
    out: np.ndarray | None = None,
    version: int = FORMAT_VERSION,
) -> np.ndarray:
    """Decode a chunk made by :func:`encode` in format ``version`` (into ``out``, ``n``
    rows of ``dtype``, when given; it is left untouched when the chunk is damaged).

    Raises:
        ChunkError: the blob is corrupt, truncated, or does not match ``dtype``/``n``.
    """
    columns = _columns(dtype)
    header = len(columns) if version >= 2 else 0
    size = header + n * dtype.itemsize
    payload = inflate(blob, size)
    if len(payload) != size:
        raise ChunkError(f"chunk holds {len(payload)} bytes, expected {size}")
    if zlib.crc32(payload) != crc:
        raise ChunkError("chunk checksum mismatch")
    codes = payload[:header] if header else bytes(_v1_codes(columns))
    for (name, ftype), code in zip(columns, codes):
        if code > FROM_START or (code == FROM_START and not _relative_to_start(name, ftype, dtype)):
            raise ChunkError(f"{name}: unknown column transform {code}")
    if out is None:
        out = np.empty(n, dtype=dtype)
    buf = np.frombuffer(payload, dtype=np.uint8, offset=header)
    # in C where it loads (every plain column, a block of rows at a time), the rest here
    left = set(
        compiled.unshuffle(buf, [(c[0], c[1], d == DELTA) for c, d in zip(columns, codes)], out)
    )
    offset = 0
    for (name, ftype), code in zip(columns, codes):
        size = n * ftype.itemsize
        if name in left:
            col = _unshuffle(buf[offset : offset + size], ftype, n)
            if code == DELTA:
                np.cumsum(col, dtype=ftype, out=col)
            out[name] = col
        offset += size
    for (name, _), code in zip(columns, codes):
        if code == FROM_START:
            out[name] += out["t_ns"]
    return out


def _v1_codes(columns: list[tuple[str, np.dtype]]) -> list[int]:
    """Format 1's transforms, implied by the layout: deltas for int64 ``*_ns`` columns."""
    return [
        DELTA if ftype.kind == "i" and ftype.itemsize == 8 and name.endswith("_ns") else RAW
        for name, ftype in columns
    ]


def inflate(blob: bytes, size: int) -> bytes:
    """The decompressed blob, or at most ``size + 1`` bytes of it: zstandard's one-shot
    ``decompress`` allocates whatever size the frame header declares, so a small hostile
    frame could ask for terabytes; a frame that declares no size is streamed instead."""
    try:
        declared = zstandard.frame_content_size(blob)
        if declared > size:
            raise ChunkError(f"chunk declares {declared} bytes, expected {size}")
        if declared >= 0:
            return zstandard.ZstdDecompressor().decompress(blob)
        parts, got = [], 0
        with zstandard.ZstdDecompressor().stream_reader(blob) as reader:
            while got <= size and (part := reader.read(size + 1 - got)):
                parts.append(part)
                got += len(part)
        return b"".join(parts)
    except zstandard.ZstdError as exc:
        raise ChunkError(f"cannot decompress chunk: {exc}") from exc


def _unshuffle(planes: np.ndarray, ftype: np.dtype, n: int) -> np.ndarray:
    """One column from its byte planes (all first bytes, then all second bytes, ...),
    copied plane by plane: a strided copy per plane is several times faster than
    numpy's copy of the transposed ``(n, itemsize)`` byte matrix."""
    col = np.empty(n, ftype)
    dst = col.view(np.uint8).reshape(n, ftype.itemsize)
    for b, plane in enumerate(planes.reshape(ftype.itemsize, n)):
        dst[:, b] = plane
    return col
