from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtop.core.ring import Ring

DT = np.dtype([("t_ns", "<i8"), ("v", "<u4")])


def batch(start: int, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=DT)
    out["t_ns"] = np.arange(start, start + n)
    return out


@given(st.integers(1, 50), st.lists(st.integers(0, 80), max_size=30))
def test_ring_keeps_newest_rows_and_counts_every_drop(capacity: int, sizes: list[int]) -> None:
    ring = Ring(DT, capacity)
    pushed = 0
    for n in sizes:
        ring.push(batch(pushed, n))
        pushed += n
    out = ring.drain()
    kept = min(pushed, capacity)
    assert len(out) == kept
    assert list(out["t_ns"]) == list(range(pushed - kept, pushed))
    assert ring.dropped == pushed - kept
    assert ring.pushed == pushed
    assert len(ring.drain()) == 0


def test_ring_rejects_other_layouts() -> None:
    ring = Ring(DT, 4)
    with pytest.raises(TypeError):
        ring.push(np.zeros(2, dtype=[("t_ns", "<i8")]))
