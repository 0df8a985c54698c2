"""One GPU: identity, 60 s sparklines of utilization and memory, and its current state."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gtop.views.fmt import sparkline
from gtop.views.fmt import values as fmt

HISTORY_S = 60.0
"""Time span of the sparklines."""

IDLE_REASON = 0x1
"""The "GPU idle" clocks-event bit: clocks low because nothing runs, not a slowdown."""

POWER_CAP = 0x4
"""The "SW power cap" clocks-event bit."""
NEAR_CAP = 0.9
"""Below this share of the power limit the power-cap bit earns no ⚠ (it was seen set at
217 of 700 W)."""

VALUE = Style(bold=True)


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
    chart_rows: reactive[int] = reactive(1, layout=True)
    """Lines of the utilisation history (the overview gives spare height to it)."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index

    def watch_chart_rows(self, rows: int) -> None:
        self.styles.height = 3 + max(1, rows)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"gpu-panel--{name}", partial=True)

    def render(self) -> Text:
        hist = self.history
        if hist is None:
            return Text("waiting for the first GPU sample…")
        width = max(self.content_size.width, 40)
        last: defaultdict[str, Any] = defaultdict(lambda: np.nan)
        if len(hist.rows):
            newest = hist.rows[-1]
            last.update((name, newest[name]) for name in hist.rows.dtype.names or ())
        out = Text("\n").join(
            [self._title(hist, last, width), *self._usage(hist, last, width), self._links(last)]
        )
        out.no_wrap = True
        out.overflow = "ellipsis"
        return out

    def _title(self, hist: GpuHistory, last: dict[str, Any], width: int) -> Text:
        """Index and name on the left; temperature, fan, power and clocks on the right."""
        label, value = self._style("label"), VALUE
        name = hist.device.get("name") or "GPU"
        title = Text(f"▌GPU {hist.index} {name}", style=self._style("title"))
        right = Text.assemble(
            (fmt.num(last["temp_c"], "°C"), value),
            (" fan ", label),
            (fmt.pct(last["fan_pct"]), value),
            " ",
            (f"{fmt.num(last['power_w'])}/{fmt.num(last['power_limit_w'], 'W')}", value),
            (" SM ", label),
            (fmt.num(last["clock_sm_mhz"]), value),
            (" MEM ", label),
            (fmt.num(last["clock_mem_mhz"], "MHz"), value),
        )
        pad = max(1, width - title.cell_len - right.cell_len)
        return Text.assemble(title, " " * pad, right)

    def _usage(self, hist: GpuHistory, last: dict[str, Any], width: int) -> list[Text]:
        """Sparklines of utilization and memory, with current values (GPM when present)."""
        label, value = self._style("label"), VALUE
        util_tail = Text.assemble(
            " ",
            (fmt.pct(last["util_gpu"], 4), value),
            ("  SM act ", label),
            (fmt.pct(last["sm_active"]), value),
            (" occ ", label),
            (fmt.pct(last["sm_occupancy"]), value),
            (" tensor ", label),
            (fmt.pct(last["tensor_active"]), value),
        )
        total = last["mem_total"]
        if fmt.missing(total):
            total = hist.device.get("mem_total", -1)
        used = last["mem_used"]
        used_pct = np.nan if fmt.missing(used) or fmt.missing(total) else 100 * used / total
        mem_tail = Text.assemble(
            " ",
            (fmt.pct(used_pct, 4), value),
            "  ",
            (f"{fmt.size(used)} / {fmt.size(total)}", value),
        )
        rows = hist.rows
        spark_w = max(8, width - 5 - util_tail.cell_len)

        def spark(field: str, hi: float, lines: int = 1) -> list[str]:
            if not len(rows):
                return [sparkline.BLANK * spark_w] * lines
            values = rows[field].astype(np.float64)
            binned = sparkline.bucket(rows["t_ns"], values, hist.t0, hist.t1, spark_w)
            return sparkline.chart(binned, 0.0, hi, lines)

        mem_hi = 1.0 if fmt.missing(total) else float(total)
        util = spark("util_gpu", 100.0, max(1, self.chart_rows))
        blank_tail = " " * util_tail.cell_len
        util_lines = [
            Text.assemble(
                ("util " if i == len(util) - 1 else "100% " if i == 0 else "     ", label),
                (line, self._style("spark")),
                util_tail if i == len(util) - 1 else blank_tail,
            )
            for i, line in enumerate(util)
        ]
        return [
            *util_lines,
            Text.assemble(
                ("mem  ", label), (spark("mem_used", mem_hi)[0], self._style("mem")), mem_tail
            ),
        ]

    def _links(self, last: dict[str, Any]) -> Text:
        """PCIe and NVLink rates, throttle reasons in words (⚠ unless idle, or power cap far
        from the cap), ECC (✗ if any uncorrected)."""
        label, value = self._style("label"), VALUE
        mask = last["throttle"]
        quiet = IDLE_REASON
        power, limit = last["power_w"], last["power_limit_w"]
        if not (fmt.missing(power) or fmt.missing(limit)) and power < NEAR_CAP * limit:
            quiet |= POWER_CAP  # NVML raises it far below the cap too: not a slowdown
        slowed = not fmt.missing(mask) and bool(int(mask) & ~quiet)
        bad = last["ecc_uncorrected"]
        ecc_bad = not fmt.missing(bad) and bad > 0
        ecc = f"{fmt.num(last['ecc_corrected'])}/{fmt.num(bad)}"
        return Text.assemble(
            ("PCIe ", label),
            (f"↑{fmt.rate(last['pcie_tx_bps'])} ↓{fmt.rate(last['pcie_rx_bps'])}", value),
            ("  NVLink ", label),
            (f"↑{fmt.rate(last['nvlink_tx_bps'])} ↓{fmt.rate(last['nvlink_rx_bps'])}", value),
            ("  throttle ", label),
            (
                ("⚠ " if slowed else "") + fmt.throttle(mask),
                self._style("warn") if slowed else value,
            ),
            ("  ECC ", label),
            (("✗ " if ecc_bad else "") + ecc, self._style("error") if ecc_bad else value),
        )
