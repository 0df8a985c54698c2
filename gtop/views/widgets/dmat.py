"""DMAT: the densified memory access timeline of one launch (from the mem_trace probe).

x = time, y = touched 64 KiB pages (untouched address ranges are left out), shade = how
many accesses fell in the cell. Rows are labelled with kernel arguments when their
pointers are known; notes under the title say which accesses came from ``.func`` bodies
and how many TMA tensor copies were not traced. ``a`` switches between the two time
alignments: %globaltimer (GPU-wide ns) and per-SM %clock64 normalised to each SM's first
access.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive

from gtop.probes.catalog import mem_trace
from gtop.views.widgets.zoom_pan import ZoomPan

SHADES = " ░▒▓█"
LABEL = len(f"{'x':<5}{0:#014x} │")  # "x    0x000000000000 │": a row's label column


class DmatView(ZoomPan):
    """Give it ``records`` (mem_trace records) and optionally ``pointers``
    (argument -> (address, bytes)). Keys: see :class:`ZoomPan`, plus ``a`` (alignment)."""

    probe_view = "dmat"
    BINDINGS = [
        Binding("a", "toggle_align", "Time alignment"),
        Binding("left_curly_bracket", "page_zoom(0.5)", "Fewer pages/row"),
        Binding("right_curly_bracket", "page_zoom(2)", "More pages/row"),
    ]

    aligns = True

    records: reactive[np.ndarray | None] = reactive(None, always_update=True)
    """mem_trace records to bin; None shows a hint."""
    pointers: reactive[dict[str, tuple[int, int]]] = reactive(dict, always_update=True)
    """Kernel argument -> (device address, bytes), for row labels."""
    notes: reactive[list[str]] = reactive(list, always_update=True)
    """Lines shown under the title (see :func:`mem_trace.notes`)."""
    align: reactive[str] = reactive("global")
    """"global" (%globaltimer ns) or "sm_clock" (per-SM %clock64 cycles)."""
    pages_per_row: reactive[int] = reactive(0)
    """Touched pages summed into one row; 0 fits all pages to the widget's height."""

    def __init__(
        self,
        records: np.ndarray | None = None,
        pointers: dict[str, tuple[int, int]] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.set_reactive(DmatView.records, records)
        self.set_reactive(DmatView.pointers, dict(pointers or {}))

    def show_result(self, accesses: mem_trace.Accesses) -> None:
        """Draw the mem_trace probe's result for one launch."""
        self.pointers = accesses.pointers
        self.notes = accesses.notes
        self.records = accesses.records

    def has_data(self) -> bool:
        return self.records is not None and len(self.records) > 0

    def row_count(self) -> int:
        return len(np.unique(self.records["addr"] // mem_trace.PAGE)) if self.has_data() else 0

    def action_toggle_align(self) -> None:
        self.align = "sm_clock" if self.align == "global" else "global"

    def action_page_zoom(self, factor: float) -> None:
        current = self.pages_per_row or self._fit(self.row_count())
        self.pages_per_row = max(1, int(current * factor))

    def _fit(self, pages: int) -> int:
        return max(1, -(-pages // max(self.size.height - 3 - len(self.notes), 1)))

    def grid(self) -> mem_trace.Dmat:
        """The DMAT binned for the current size, zoom, pan and alignment."""
        assert self.records is not None
        full = int(mem_trace.timeline(self.records, self.align).max()) + 1
        lo, hi = self.window(full)
        width = max(self.size.width - LABEL, 10)
        return mem_trace.dmat(
            self.records, width, self.align, (int(lo), max(int(hi), int(lo) + 1)), self.pointers
        )

    def render(self) -> Text:
        if not self.has_data():
            return Text("No memory trace: toggle the mem_trace probe on a Triton kernel.")
        d = self.grid()
        per_row = self.pages_per_row or self._fit(len(d.pages))
        starts = _row_starts(d.labels, per_row)
        counts = np.add.reduceat(d.counts, starts, axis=1)
        out = Text(no_wrap=True, overflow="crop")
        where = "global timer" if d.align == "global" else "per-SM clock"
        out.append(f"DMAT {len(self.records):,} accesses, {len(d.pages)} pages", "bold")
        out.append(f" ({per_row}/row), {where}\n", "bold")
        for note in self.notes:
            out.append(note + "\n", "#ffaf00")
        out.append(f"{'arg  64 KiB page':<{LABEL - 2}} │ time →, shade: accesses\n", "dim")
        rows = max(self.size.height - 3 - len(self.notes), 1)
        peak = max(int(counts.max()), 1)
        last = ""
        for r in range(min(self.top, max(len(starts) - 1, 0)), min(self.top + rows, len(starts))):
            name = d.labels[starts[r]]
            label = name if name != last else ""
            last = name
            out.append(f"{label:<5.5}{int(d.pages[starts[r]]) * mem_trace.PAGE:#014x} │", "dim")
            col = counts[:, r]
            level = np.where(col > 0, 1 + np.log1p(col) * 3.999 / np.log1p(peak), 0).astype(int)
            out.append("".join(SHADES[min(x, 4)] for x in level), "#ffaf00")
            out.append("\n")
        out.append(f"{d.t_lo:,} … {d.t_hi:,} {d.unit}, darkest = {peak} accesses", "dim")
        return out


def _row_starts(labels: list[str], per_row: int) -> np.ndarray:
    """First page index of each row: ``per_row`` pages at most, and a new row wherever
    the argument label changes, so no row mixes two arguments."""
    starts = []
    seg = 0
    for i, name in enumerate(labels):
        if i == 0 or name != labels[i - 1]:
            seg = i
        if (i - seg) % per_row == 0:
            starts.append(i)
    return np.asarray(starts, dtype=np.int64)
