"""Per-thread state bars over a recent window: on-CPU, runnable, blocked by reason.

One row per thread: its label, then one cell per time bin coloured by the state that
took most of that bin. Feed it THREAD_STATE records (live or replayed) with
:meth:`ThreadBars.show`; it keeps only what the window needs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gtop.core.layouts import THREAD_STATE, BlockReason, ThreadState

LABEL_W = 18
# Categories: 0 on-CPU, 1 runnable, 2 + BlockReason for blocked; -1 no data.
_CATEGORIES = [("on-CPU", "green"), ("runnable", "yellow")] + [
    (r.name.lower().replace("_", " "), c)
    for r, c in zip(
        BlockReason,
        ["grey50", "blue", "red", "grey35", "cyan", "magenta", "white"],
        strict=True,
    )
]


def bin_states(intervals: np.ndarray, tids: list[int], t0: int, t1: int, bins: int) -> np.ndarray:
    """``[len(tids), bins]`` category of the state covering most of each bin (-1: none)."""
    out = np.full((len(tids), bins), -1, dtype=np.int16)
    if bins <= 0 or t1 <= t0:
        return out
    edges = np.linspace(t0, t1, bins + 1)
    cats = np.where(
        intervals["state"] == ThreadState.BLOCKED,
        2 + intervals["reason"].astype(np.int16),
        intervals["state"].astype(np.int16),
    )
    for row, tid in enumerate(tids):
        sel = intervals["tid"] == tid
        a, b, c = intervals["t_ns"][sel], intervals["end_ns"][sel], cats[sel]
        weight = np.zeros((bins, len(_CATEGORIES)))
        for cat in np.unique(c).tolist():
            m = c == cat
            # time of this category inside each bin = overlap of [a, b) with the bin
            lo = np.clip(a[m][:, None], edges[:-1], edges[1:])
            hi = np.clip(b[m][:, None], edges[:-1], edges[1:])
            weight[:, cat] = (hi - lo).sum(axis=0)
        has = weight.sum(axis=1) > 0
        out[row, has] = weight[has].argmax(axis=1)
    return out


class ThreadBars(Widget):
    """State bars per thread over the last ``window_s`` seconds."""

    DEFAULT_CSS = """
    ThreadBars { height: auto; min-height: 3; }
    """

    window_s: reactive[float] = reactive(10.0)
    """Width of the shown window, in seconds, ending at the latest record."""
    max_threads: reactive[int] = reactive(32)
    """Threads shown, busiest (least blocked) first."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._intervals = THREAD_STATE.empty()
        self._names: dict[int, str] = {}
        self._now = 0

    def show(self, intervals: np.ndarray, names: Mapping[int, str], now_ns: int) -> None:
        """Replace the records shown (anything older than the window is dropped)."""
        keep = intervals["end_ns"] > now_ns - int(self.window_s * 1e9)
        self._intervals, self._names, self._now = intervals[keep], dict(names), now_ns
        self.refresh(layout=True)

    def _tids(self) -> list[int]:
        rows = self._intervals
        if not len(rows):
            return []
        tids = np.unique(rows["tid"])
        busy = [
            -((rows["end_ns"] - rows["t_ns"])[(rows["tid"] == t) & (rows["state"] != 2)].sum())
            for t in tids
        ]
        order = np.argsort(busy, kind="stable")
        return [int(tids[i]) for i in order[: self.max_threads]]

    def get_content_height(self, _container: object, _viewport: object, width: int) -> int:
        return len(self._tids()) + 1

    def render(self) -> Text:
        width = self.size.width
        tids = self._tids()
        t1 = self._now
        t0 = t1 - int(self.window_s * 1e9)
        cells = bin_states(self._intervals, tids, t0, t1, max(width - LABEL_W, 0))
        lines = []
        for tid, row in zip(tids, cells, strict=True):
            label = f"{self._names.get(tid, '')[:11]} {tid}"[: LABEL_W - 1].ljust(LABEL_W)
            line = Text(label)
            for cat in row.tolist():
                line.append(" ", Style(bgcolor=_CATEGORIES[cat][1]) if cat >= 0 else None)
            lines.append(line)
        legend = Text(" " * LABEL_W)
        for name, colour in _CATEGORIES:
            if name != "none":
                legend.append("  ", Style(bgcolor=colour)).append(f" {name} ")
        lines.append(legend)
        return Text("\n").join(lines)
