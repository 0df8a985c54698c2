"""Column-chunk codec: a batch of records ↔ one compressed blob.

A chunk stores each field as a contiguous column. Integer ``*_ns`` columns (timestamps,
durations) are delta-encoded first, then every column is byte-shuffled (all first bytes,
then all second bytes, …) so that zstd sees long runs of similar bytes. The checksum is
over the decoded bytes, so corruption anywhere is detected on read.
"""

from __future__ import annotations

import zlib

import numpy as np
import zstandard

ZSTD_LEVEL = 3


class ChunkError(ValueError):
    """A chunk could not be decoded (corrupt or truncated data)."""


def _is_delta_column(name: str, dtype: np.dtype) -> bool:
    return dtype.kind == "i" and dtype.itemsize == 8 and (name == "t_ns" or name.endswith("_ns"))


def _columns(dtype: np.dtype) -> list[tuple[str, np.dtype]]:
    return [(name, dtype[name]) for name in dtype.names or ()]


def encode(records: np.ndarray) -> tuple[bytes, int]:
    """Encode a record array.

    Returns:
        ``(blob, crc)``: the compressed chunk and the CRC-32 of its decoded payload.
    """
    parts = []
    for name, ftype in _columns(records.dtype):
        col = np.ascontiguousarray(records[name])
        if _is_delta_column(name, ftype):
            col = np.diff(col, prepend=np.zeros(1, dtype=col.dtype))
        raw = col.view(np.uint8).reshape(len(col), ftype.itemsize)
        parts.append(np.ascontiguousarray(raw.T).tobytes())
    payload = b"".join(parts)
    crc = zlib.crc32(payload)
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(payload), crc


def decode(
    blob: bytes, dtype: np.dtype, n: int, crc: int, out: np.ndarray | None = None
) -> np.ndarray:
    """Decode a chunk made by :func:`encode` (into ``out``, ``n`` rows of ``dtype``, when
    given; it is left untouched when the chunk is damaged).

    Raises:
        ChunkError: the blob is corrupt, truncated, or does not match ``dtype``/``n``.
    """
    payload = _inflate(blob, n * dtype.itemsize)
    if len(payload) != n * dtype.itemsize:
        raise ChunkError(f"chunk holds {len(payload)} bytes, expected {n * dtype.itemsize}")
    if zlib.crc32(payload) != crc:
        raise ChunkError("chunk checksum mismatch")
    if out is None:
        out = np.empty(n, dtype=dtype)
    buf = np.frombuffer(payload, dtype=np.uint8)
    offset = 0
    for name, ftype in _columns(dtype):
        size = n * ftype.itemsize
        col = _unshuffle(buf[offset : offset + size], ftype, n)
        if _is_delta_column(name, ftype):
            np.cumsum(col, out=col)
        out[name] = col
        offset += size
    return out


def _inflate(blob: bytes, size: int) -> bytes:
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
