"""Whole-record copies and views of structured tables (gtop.core.rows)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gtop.core.rows import kept_rows, take_rows

ROW = np.dtype([("t", "<i8"), ("pid", "<i4"), ("kind", "<u1")])


def _table(n: int) -> np.ndarray:
    out = np.zeros(n, ROW)
    out["t"], out["pid"], out["kind"] = np.arange(n) * 7, np.arange(n) % 5, np.arange(n) % 3
    return out


@given(st.lists(st.booleans(), max_size=40))
def test_kept_rows_are_the_masked_rows(mask: list[bool]) -> None:
    table = _table(len(mask))
    keep = np.array(mask, bool)
    assert kept_rows(table, keep).tobytes() == table[keep].tobytes()
    assert kept_rows(table, keep).tobytes() == take_rows(table, keep).tobytes()


def test_one_long_run_is_a_view_and_anything_else_a_copy() -> None:
    table = _table(10)
    run = np.zeros(10, bool)
    run[1:9] = True  # a clipped read: a row dropped at each edge
    assert np.shares_memory(kept_rows(table, run), table)
    assert kept_rows(table, np.ones(10, bool)) is table
    short = np.zeros(10, bool)
    short[2:5] = True  # under half: copied, so the table's memory can go
    assert not np.shares_memory(kept_rows(table, short), table)
    holes = run.copy()
    holes[4] = False
    assert not np.shares_memory(kept_rows(table, holes), table)
