"""Text sparklines over a fixed time window.

A sparkline reads in any terminal, colour or not: the height of each glyph is the value.
Time runs left to right at a fixed scale (the window divided by the width), so a gap in
the data is a blank, never a stretched neighbour; zero is the lowest bar, not a blank.
"""

from __future__ import annotations

import numpy as np

BARS = "▁▂▃▄▅▆▇█"
BLANK = " "


def bucket(times: np.ndarray, values: np.ndarray, t0: int, t1: int, n: int) -> np.ndarray:
    """Mean of ``values`` in ``n`` equal time buckets over ``[t0, t1]``; NaN where empty.

    Missing inputs (NaN) are ignored.
    """
    out = np.full(n, np.nan)
    if n <= 0 or t1 <= t0 or not len(times):
        return out
    vals = values.astype(np.float64)
    keep = (times >= t0) & (times <= t1) & ~np.isnan(vals)
    if not keep.any():
        return out
    idx = ((times[keep] - t0) * n // (t1 - t0 + 1)).astype(np.int64)
    sums = np.bincount(idx, weights=vals[keep], minlength=n)
    counts = np.bincount(idx, minlength=n)
    filled = counts > 0
    out[filled] = sums[filled] / counts[filled]
    return out


def render(values: np.ndarray, lo: float, hi: float) -> str:
    """One glyph per value, scaled from ``lo`` (lowest bar) to ``hi`` (full bar)."""
    if hi <= lo or np.isnan(hi):
        hi = lo + 1.0
    chars = []
    top = len(BARS) - 1
    for v in values:
        if np.isnan(v):
            chars.append(BLANK)
        else:
            level = round((min(max(float(v), lo), hi) - lo) / (hi - lo) * top)
            chars.append(BARS[level])
    return "".join(chars)


def spark(
    times: np.ndarray, values: np.ndarray, t0: int, t1: int, width: int, lo: float, hi: float
) -> str:
    """:func:`bucket` then :func:`render`."""
    return render(bucket(times, values, t0, t1, width), lo, hi)


def chart(values: np.ndarray, lo: float, hi: float, rows: int) -> list[str]:
    """A sparkline ``rows`` lines tall, top line first: each column is a bar of
    ``rows * 8`` steps (``█`` below the top of the bar, a partial glyph at it); NaN is
    a blank column, the lowest value still shows a ``▁`` on the bottom line."""
    if hi <= lo or np.isnan(hi):
        hi = lo + 1.0
    steps = len(BARS) * rows
    lines = [[BLANK] * len(values) for _ in range(rows)]
    for x, v in enumerate(values):
        if np.isnan(v):
            continue
        level = max(1, round((min(max(float(v), lo), hi) - lo) / (hi - lo) * steps))
        for r in range(rows):  # r = 0 is the bottom line
            fill = min(len(BARS), level - r * len(BARS))
            if fill > 0:
                lines[rows - 1 - r][x] = BARS[fill - 1]
    return ["".join(line) for line in lines]
