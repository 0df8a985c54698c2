"""Busy-fraction timeline cells, shared by every timeline (Streams, Swimlanes, the
GPU-time ribbon).

A cell covers ``[edges[i], edges[i+1])``. Its glyph's height is the share of the cell
that was *busy* (``▁``: a little, ``█``: all of it), so a stream 37% busy draws ``▃``,
never a solid block; its colour is the state that held the cell longest (a *quiet*
state, such as a stream's plain idle, only when nothing else is in the cell). A cell
with no busy time shows that state's letter instead (``a``, ``w``, ``i``...), so the
idle reason still reads without colour; a cell with no data is blank.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
from rich.text import Text

from gtop.analysis.attribution import slices
from gtop.views.fmt.units import duration

BARS = "▁▂▃▄▅▆▇█"
NO_DATA = " "


class Cells(NamedTuple):
    """Per cell: the busy share of the cell (0..1) and the code held longest (-1: no
    data in the cell)."""

    fraction: np.ndarray
    dominant: np.ndarray


def cell_edges(t0: int, t1: int, n: int) -> np.ndarray:
    """``n + 1`` edges of ``n`` equal cells over ``[t0, t1)`` (integers, first ``t0``,
    last ``t1``)."""
    n = max(1, n)
    return t0 + np.rint(np.arange(n + 1) * ((t1 - t0) / n)).astype(np.int64)


def busy_cells(
    starts: np.ndarray,
    ends: np.ndarray,
    codes: np.ndarray,
    n_codes: int,
    edges: np.ndarray,
    busy: np.ndarray,
    quiet: np.ndarray | None = None,
    unseen: np.ndarray | None = None,
) -> Cells:
    """The cells over ``edges`` of segments ``[starts, ends)`` labelled ``codes`` (any
    order; overlapping busy time counts once at most, as the fraction is capped at 1).

    ``busy``, ``quiet`` and ``unseen`` are bool masks over codes: which codes count as
    busy, which colour a cell only when no other code is in it, and which are time
    nothing was seen in (kernel sampling's off phases): the busy share is of the rest.
    """
    occ = slices.occupancy_of(starts, ends, codes, n_codes, edges)
    length = np.diff(edges)
    if unseen is not None:
        length = length - occ[:, unseen].sum(axis=1)
    length = np.maximum(length, 1)
    fraction = np.minimum(occ[:, busy].sum(axis=1) / length, 1.0)
    loud = occ if quiet is None else np.where(quiet, 0, occ)
    held = np.where(loud.sum(axis=1, keepdims=True) > 0, loud, occ)
    dominant = np.where(occ.sum(axis=1) > 0, held.argmax(axis=1), -1)
    return Cells(fraction, dominant)


def level(fraction: float) -> int:
    """Index into :data:`BARS` for a busy share above zero: ``(0, 1/8]`` is ``▁``,
    ``(7/8, 1]`` is ``█``."""
    return int(min(len(BARS), max(1, np.ceil(fraction * len(BARS) - 1e-9)))) - 1


def glyph(fraction: float, code: int, letters: Mapping[int, str]) -> str:
    """The glyph of one cell (module docstring)."""
    if code < 0:
        return NO_DATA
    if fraction <= 0:
        return letters.get(code, "·")
    return BARS[level(fraction)]


def draw(cells: Cells, letters: Mapping[int, str], styles: Mapping[int, str], color: bool) -> Text:
    """One line of cells: glyph by :func:`glyph`, colour by the dominant code."""
    out = Text(no_wrap=True, overflow="crop")
    for frac, code in zip(cells.fraction.tolist(), cells.dominant.tolist(), strict=True):
        out.append(glyph(frac, code, letters), styles.get(code, "") if color else "")
    return out


def axis(width: int, span_ns: int, lag_ns: int = 0) -> str:
    """The time axis under ``width`` cells spanning ``span_ns`` that end ``lag_ns``
    before the newest data: ``-10 s ... now`` (or ``... -1 s`` with a lag)."""
    left = f"-{duration(span_ns + lag_ns)}"
    right = "now" if lag_ns <= 0 else f"-{duration(lag_ns)}"
    return left + " " * max(1, width - len(left) - len(right)) + right
