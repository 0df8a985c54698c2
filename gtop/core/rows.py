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
    """``table[index]`` for a structured table, copied as whole raw records (a view
    when ``index`` is a slice)."""
    return table.view(_raw(table.dtype))[index].view(table.dtype)


def kept(keep: np.ndarray) -> slice | np.ndarray:
    """Where boolean ``keep`` is true: a slice when that is one run (indexing with it
    gives views, not copies), else the positions."""
    at = np.flatnonzero(keep)
    if len(at) and int(at[-1]) - int(at[0]) + 1 == len(at):
        return slice(int(at[0]), int(at[-1]) + 1)
    return at


def kept_rows(table: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``table[keep]`` for a boolean ``keep``: ``table`` itself when every row is kept,
    a view when the kept rows are one run holding at least half of them (a clipped read
    of a long stream drops a few rows at its edges: no copy of the rest), else a copy
    (:func:`take_rows`). The result may share ``table``'s memory: for fresh tables."""
    rows = kept(keep)
    if not isinstance(rows, slice):
        return take_rows(table, rows)
    if rows.stop - rows.start == len(table):
        return table
    return table[rows] if 2 * (rows.stop - rows.start) >= len(table) else table[rows].copy()


def concat_rows(tables: list[np.ndarray]) -> np.ndarray:
    """Tables of one structured dtype, end to end (as raw records)."""
    dtype = tables[0].dtype
    return np.concatenate([t.view(_raw(dtype)) for t in tables]).view(dtype)
