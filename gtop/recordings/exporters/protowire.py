"""A small protobuf wire-format writer: single messages, and many same-shaped ones at once.

:class:`Batch` builds ``n`` messages column by column with numpy (a field is a column of
values, present where a mask says), then lays them out back to back in one pass, so a
million trace events cost a few dozen array operations rather than a million Python
calls. Field numbers belong to the caller (the exporters name them from the .proto).
"""

from __future__ import annotations

import numpy as np

VARINT, FIXED64, LEN = 0, 1, 2


def varint(value: int) -> bytes:
    """``value`` as a base-128 varint (negative numbers as 64-bit two's complement)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def field_varint(number: int, value: int) -> bytes:
    return key(number, VARINT) + varint(value)


def field_bytes(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return key(number, LEN) + varint(len(data)) + data


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's varint bytes (rows of a matrix) and length."""
    v = values.astype(np.int64).view(np.uint64)
    n = len(v)
    lengths = np.ones(n, np.int64)
    rest = v >> np.uint64(7)
    while np.any(rest):
        lengths += rest > 0
        rest >>= np.uint64(7)
    width = int(lengths.max()) if n else 1
    out = np.empty((n, width), np.uint8)
    for i in range(width):
        out[:, i] = ((v >> np.uint64(7 * i)) & np.uint64(0x7F)).astype(np.uint8) | 0x80
    if n:
        out[np.arange(n), lengths - 1] &= 0x7F
    return out, lengths


class Batch:
    """``n`` messages of one shape, built field by field; ``where`` masks a field to the
    rows that have it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []  # (rows × bytes, length per row)

    def _add(self, matrix: np.ndarray, lengths: np.ndarray, where: np.ndarray | None) -> None:
        if where is not None:
            lengths = np.where(where, lengths, 0)
        self.parts.append((matrix, lengths))

    def raw(self, data: bytes, where: np.ndarray | None = None) -> None:
        """The same bytes in every row (a key, a constant field)."""
        matrix = np.frombuffer(data, np.uint8).reshape(1, -1)
        self._add(matrix, np.full(self.n, len(data), np.int64), where)

    def varint(self, number: int, values: np.ndarray, where: np.ndarray | None = None) -> None:
        self.raw(key(number, VARINT), where)
        self._add(*_varints(values), where)

    def double(self, number: int, values: np.ndarray, where: np.ndarray | None = None) -> None:
        self._fixed64(number, np.ascontiguousarray(values, "<f8"), where)

    def fixed64(self, number: int, values: np.ndarray, where: np.ndarray | None = None) -> None:
        self._fixed64(number, np.ascontiguousarray(values, "<u8"), where)

    def _fixed64(self, number: int, values: np.ndarray, where: np.ndarray | None) -> None:
        self.raw(key(number, FIXED64), where)
        matrix = values.view(np.uint8).reshape(self.n, 8)
        self._add(matrix, np.full(self.n, 8, np.int64), where)

    def strings(self, number: int, values: np.ndarray, where: np.ndarray | None = None) -> None:
        """A length-delimited field from a numpy bytes array (dtype ``S``)."""
        self.raw(key(number, LEN), where)
        lengths = np.char.str_len(values).astype(np.int64)
        self._add(*_varints(lengths), where)
        width = max(values.dtype.itemsize, 1)
        matrix = np.frombuffer(values.astype(f"S{width}").tobytes(), np.uint8)
        self._add(matrix.reshape(self.n, width), lengths, where)

    def message(self, number: int, inner: Batch, where: np.ndarray | None = None) -> None:
        """``inner``'s rows as a nested message field."""
        self.raw(key(number, LEN), where)
        self._add(*_varints(inner.lengths()), where)
        for matrix, lengths in inner.parts:
            self._add(matrix, lengths, where)

    def lengths(self) -> np.ndarray:
        total = np.zeros(self.n, np.int64)
        for _, lengths in self.parts:
            total += lengths
        return total

    def tobytes(self) -> bytes:
        """Every row's bytes, back to back."""
        total = self.lengths()
        out = np.empty(int(total.sum()), np.uint8)
        pos = np.cumsum(total) - total
        for matrix, lengths in self.parts:
            for j in range(matrix.shape[1]):
                rows = np.flatnonzero(lengths > j)
                if not len(rows):
                    break
                column = matrix[:, j] if matrix.shape[0] > 1 else matrix[0, j]
                out[pos[rows] + j] = column[rows] if matrix.shape[0] > 1 else column
            pos += lengths
        return out.tobytes()
