"""One GPU: identity, 60 s sparklines of utilization and memory, and its current state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gtop.views import fmt, sparkline

HISTORY_S = 60.0
"""Time span of the sparklines."""


@dataclass(frozen=True, eq=False)
class GpuHistory:
    """The last :data:`HISTORY_S` of ``gpu`` rows of one GPU, ending at ``t1``."""

    index: int
    device: dict[str, Any]
    rows: np.ndarray
    t1: int

    @property
    def t0(self) -> int:
        return self.t1 - int(HISTORY_S * 1e9)


class GpuPanel(Widget):
    """Four lines per GPU, readable without colour (shapes and words carry the meaning).

    ::

        ▌GPU 0 NVIDIA H100 80GB HBM3        54°C fan N/A 312/700 W SM 1980 MEM 2619 MHz
        util ▁▂▃▅▇██▇▅▃▂▁      87%  SM act 75% occ 40% tensor 30%
        mem  ▂▂▂▃▃▃▃▃▃▃▃▃      42.1 GiB / 80.0 GiB 53%
        PCIe ↑1.2 GB/s ↓3.4 GB/s  NVLink ↑N/A ↓N/A  throttle none  ECC 0/0
    """

    DEFAULT_CSS = """
    GpuPanel {
        height: 4;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    GpuPanel > .gpu-panel--title { text-style: bold reverse; }
    GpuPanel > .gpu-panel--label { color: $text-muted; }
    GpuPanel > .gpu-panel--spark { color: $success; }
    GpuPanel > .gpu-panel--mem { color: $secondary; }
    GpuPanel > .gpu-panel--warn { color: $warning; text-style: bold; }
    GpuPanel > .gpu-panel--error { color: $error; text-style: bold; }
    """

    COMPONENT_CLASSES = {
        "gpu-panel--title",
        "gpu-panel--label",
        "gpu-panel--spark",
        "gpu-panel--mem",
        "gpu-panel--warn",
        "gpu-panel--error",
    }

    history: reactive[GpuHistory | None] = reactive(None, layout=False)
    """The data drawn; replaced (never mutated) on every model update."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"gpu-panel--{name}", partial=True)

    def render(self) -> Text:
        hist = self.history
        if hist is None:
            return Text("waiting for the first GPU sample…")
        width = max(self.content_size.width, 40)
        rows = hist.rows
        last: dict[str, Any] = {}
        if len(rows):
            newest = rows[-1]
            last = {name: newest[name] for name in rows.dtype.names or ()}
        label, value = self._style("label"), Style(bold=True)

        def field(name: str) -> Any:
            return last.get(name, np.nan)

        name = hist.device.get("name") or "GPU"
        title = Text(f"▌GPU {hist.index} {name}", style=self._style("title"), no_wrap=True)
        right = Text.assemble(
            (fmt.num(field("temp_c"), "°C"), value),
            (" fan ", label),
            (fmt.pct(field("fan_pct")), value),
            " ",
            (f"{fmt.num(field('power_w'))}/{fmt.num(field('power_limit_w'), 'W')}", value),
            (" SM ", label),
            (fmt.num(field("clock_sm_mhz")), value),
            (" MEM ", label),
            (fmt.num(field("clock_mem_mhz"), "MHz"), value),
        )
        pad = max(1, width - title.cell_len - right.cell_len)
        line1 = Text.assemble(title, " " * pad, right)

        util_tail = Text.assemble(
            " ",
            (fmt.pct(field("util_gpu"), 4), value),
            ("  SM act ", label),
            (fmt.pct(field("sm_active")), value),
            (" occ ", label),
            (fmt.pct(field("sm_occupancy")), value),
            (" tensor ", label),
            (fmt.pct(field("tensor_active")), value),
        )
        total = field("mem_total")
        if fmt.missing(total):
            total = hist.device.get("mem_total", -1)
        used = field("mem_used")
        used_pct = np.nan if fmt.missing(used) or fmt.missing(total) else 100 * used / total
        mem_tail = Text.assemble(
            " ",
            (fmt.pct(used_pct, 4), value),
            ("  ", label),
            (f"{fmt.size(used)} / {fmt.size(total)}", value),
        )
        spark_w = max(8, width - 5 - util_tail.cell_len)
        times = rows["t_ns"] if len(rows) else np.empty(0, np.int64)

        def spark(values: np.ndarray, hi: float) -> str:
            return sparkline.spark(times, values, hist.t0, hist.t1, spark_w, 0.0, hi)

        util = spark(rows["util_gpu"] if len(rows) else np.empty(0), 100.0)
        mem_hi = float(total) if not fmt.missing(total) else 1.0
        mem = spark(rows["mem_used"].astype(np.float64) if len(rows) else np.empty(0), mem_hi)
        line2 = Text.assemble(("util ", label), (util, self._style("spark")), util_tail)
        line3 = Text.assemble(("mem  ", label), (mem, self._style("mem")), mem_tail)

        mask = field("throttle")
        busy_reasons = not fmt.missing(mask) and int(mask) & ~0x1
        ecc_bad = not fmt.missing(field("ecc_uncorrected")) and field("ecc_uncorrected") > 0
        line4 = Text.assemble(
            ("PCIe ", label),
            (f"↑{fmt.rate(field('pcie_tx_bps'))} ↓{fmt.rate(field('pcie_rx_bps'))}", value),
            ("  NVLink ", label),
            (f"↑{fmt.rate(field('nvlink_tx_bps'))} ↓{fmt.rate(field('nvlink_rx_bps'))}", value),
            ("  throttle ", label),
            (
                ("⚠ " if busy_reasons else "") + fmt.throttle(mask),
                self._style("warn") if busy_reasons else value,
            ),
            ("  ECC ", label),
            (
                ("✗ " if ecc_bad else "")
                + f"{fmt.num(field('ecc_corrected'))}/{fmt.num(field('ecc_uncorrected'))}",
                self._style("error") if ecc_bad else value,
            ),
        )
        out = Text("\n").join([line1, line2, line3, line4])
        out.no_wrap = True
        out.overflow = "ellipsis"
        return out
