"""Whole-record copies of structured arrays.

numpy copies structured rows field by field, which for wide layouts is many times
slower than copying the same bytes as opaque records; these helpers view a table as
fixed-size raw records, copy those, and view the result back.
"""

from __future__ import annotations

import numpy as np


def _raw(dtype: np.dtype) -> np.dtype:
    return np.dtype((np.void, dtype.itemsize))


def take_rows(table: np.ndarray, index: np.ndarray | slice) -> np.ndarray:
    """``table[index]`` for a structured table, copied as whole raw records."""
    return table.view(_raw(table.dtype))[index].view(table.dtype)


def kept_rows(table: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``table[keep]`` for a boolean ``keep``: ``table`` itself when every row is kept,
    a view when the kept rows are one run holding at least half of them (a clipped read
    of a long stream drops a few rows at its edges: no copy of the rest), else a copy
    (:func:`take_rows`). The result may share ``table``'s memory: for fresh tables."""
    at = np.flatnonzero(keep)
    if len(at) == len(table):
        return table
    if len(at) and int(at[-1]) - int(at[0]) + 1 == len(at) and 2 * len(at) >= len(table):
        return table[int(at[0]) : int(at[-1]) + 1]
    return take_rows(table, at)


def concat_rows(tables: list[np.ndarray]) -> np.ndarray:
    """Tables of one structured dtype, end to end (as raw records)."""
    dtype = tables[0].dtype
    return np.concatenate([t.view(_raw(dtype)) for t in tables]).view(dtype)
