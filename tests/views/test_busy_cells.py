"""Every timeline cell shows its busy fraction: the Streams timeline, the Swimlanes
stream lane and the GPU-time ribbon draw the same cells for the same window of a real
recording, and each cell's height is the share of the cell kernels covered there.

``constructed-sleep.gtop`` (H200): one stream alternating a ~5.7 ms kernel burst with a
5 ms sleep, so cells of ~3.1 ms run through every height from empty to full.
"""

from __future__ import annotations

import numpy as np
import pytest

from gtop.core import layouts
from gtop.recordings.reader import Recording
from gtop.views.fmt import busy
from gtop.views.widgets.gpu_ribbon import GpuRibbon
from tests.views.conftest import REPO
from tests.views.timelines import Timelines

RECORDING = REPO / "recordings" / "constructed-sleep.gtop"
STREAMS = ("kernel", "memcpy", "memset", "api", "sync", "thread_state", "cpu_sample")
WIDTH = 80
CELLS = 64
SPAN_NS = 200_000_000


def load() -> tuple[dict[str, np.ndarray], int]:
    with Recording(RECORDING) as rec:
        data = {name: rec.read(name) for name in STREAMS if name in rec.streams}
    data.setdefault("memcpy", layouts.MEMCPY.empty(0))
    data.setdefault("memset", layouts.MEMSET.empty(0))
    k = data["kernel"]
    t1 = int(k["t_ns"][len(k) // 2])  # mid-run: bursts and sleeps on both sides
    return data, t1


def expected_fractions(kernels: np.ndarray, edges: np.ndarray) -> list[float]:
    """Kernel time inside each cell over the cell's length, one cell at a time."""
    out = []
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        covered = np.clip(kernels["end_ns"], lo, hi) - np.clip(kernels["t_ns"], lo, hi)
        out.append(min(1.0, float(covered.sum()) / (hi - lo)))
    return out


def heights(line: str) -> list[float]:
    """Each glyph's height in eighths (0: no busy time)."""
    return [(busy.BARS.index(ch) + 1) / 8 if ch in busy.BARS else 0.0 for ch in line]


def board() -> Timelines:
    data, t1 = load()
    return Timelines(data, t1, SPAN_NS, CELLS)


async def test_every_timeline_draws_each_cells_busy_fraction() -> None:
    app = board()
    async with app.run_test(size=(WIDTH, 30)) as pilot:
        await pilot.pause()
        t1 = app.t1
        edges = busy.cell_edges(t1 - SPAN_NS, t1, CELLS)
        want = expected_fractions(app.data["kernel"], edges)
        assert min(want) == 0.0 and max(want) > 0.99
        assert len({busy.level(f) for f in want if f > 0}) >= 4
        want_glyphs = [busy.BARS[busy.level(f)] if f > 0 else None for f in want]

        rows = app.cells_drawn()
        stream_row = app.lines()["streams"]
        for name, row in rows.items():
            assert len(row) == CELLS, name
            for i, (glyph, bar) in enumerate(zip(row, want_glyphs, strict=True)):
                if bar is None:
                    assert glyph not in busy.BARS, (name, i, glyph)
                else:
                    assert glyph == bar, (name, i, glyph, want[i])
        # the three agree, and with the stream's percentage
        assert rows["streams"].replace("·", " ") == rows["swimlanes"].replace("·", " ")
        percent = float(stream_row.rsplit(None, 1)[-1].rstrip("%"))
        assert percent == pytest.approx(100 * np.mean(want), abs=0.5)
        assert np.mean(heights(rows["ribbon"])) == pytest.approx(np.mean(want), abs=1 / 16)


async def test_axis_labels_the_real_span() -> None:
    app = board()
    async with app.run_test(size=(WIDTH, 30)) as pilot:
        await pilot.pause()
        axis = app.query_one(GpuRibbon).render().plain.splitlines()[1]
        assert axis.startswith("-200 ms") and axis.endswith("now") and len(axis) == CELLS
        assert busy.axis(40, 10_000_000_000, 1_000_000_000).split() == ["-11", "s", "-1", "s"]
