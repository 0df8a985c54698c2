"""Per-SM block schedule of one kernel launch (from the block_sched probe).

Rows are SMs (by id; ids need not be dense), the x axis is time since kernel start.
A cell's height shows how many blocks were resident on the SM then, its colour the
wave of the earliest of them, so waves and the tail stand out. Each row ends with the
SM's ``busy`` share of the kernel's wall time and its ``sched`` share (:data:`SCHED`). A
summary on top tells the kernel's wall time from the block time summed over all blocks
(blocks run side by side, so the sum is far longer), and the tail; the bottom line the
block-duration spread.
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive

from gtop.probes.catalog.block_sched import Schedule
from gtop.views.widgets.zoom_pan import ZoomPan

WAVE_STYLES = ("bold #5fafff", "bold #87d75f", "bold #ffaf00", "bold #d787ff", "bold #ff5f5f")
LEVELS = " ▁▂▃▄▅▆▇█"
LABEL = 11  # "SM  131   │", or "SM 128-131│" for a group
GROUP_BELOW = 16
"""Fewer free rows than this: one row per group of SMs, so every SM shows."""
STATS = 21  # " busy  97% sched 1.2%"
HEAD = 3
"""Summary lines above the SM rows (one more, the durations, goes below them)."""
SCHED = (
    "sched: time an SM's block slots sat empty between one block ending and the next "
    "starting (block scheduling), as a share of its blocks' run time"
)
"""What the rows' ``sched`` share means (the legend shows it)."""


def _unit(span_ns: float) -> tuple[float, str, int]:
    """One time unit for a whole view (divisor, suffix, decimals), from its span: a view
    that read "0.0 µs … 0.215 ms" mixed two."""
    return (1e6, "ms", 3) if span_ns >= 1e5 else (1e3, "µs", 1)


def _in(ns: float, unit: tuple[float, str, int]) -> str:
    div, suffix, digits = unit
    return f"{ns / div:.{digits}f} {suffix}"


class SmSchedule(ZoomPan):
    """The per-SM block schedule; give it ``schedule`` (a :class:`Schedule`) to draw.
    Keys (see :class:`ZoomPan`): zoom/pan time, scroll SMs."""

    probe_view = "schedule"
    BINDINGS = [Binding("g", "toggle_group", "Group SMs")]

    schedule: reactive[Schedule | None] = reactive(None, always_update=True)
    """The schedule to draw (the output of ``block_sched.analyse``); None shows a hint."""
    grouped: reactive[bool | None] = reactive(None)
    """One row per group of SMs (all SMs fit the rows); None: grouped when fewer than
    :data:`GROUP_BELOW` rows are free (a short terminal showed 5 of 132 SMs)."""

    def __init__(self, schedule: Schedule | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.set_reactive(SmSchedule.schedule, schedule)

    def show_result(self, schedule: Schedule | None) -> None:
        """Draw the block_sched probe's result for one launch."""
        self.schedule = schedule

    def has_data(self) -> bool:
        return self.schedule is not None

    def row_count(self) -> int:
        if not self.schedule:
            return 0
        return -(-self.schedule.sms // self._per_row(max(self.size.height - HEAD - 1, 1)))

    def _per_row(self, rows: int) -> int:
        """SMs per row: 1, or as many as make every SM fit ``rows``."""
        sms = self.schedule.sms if self.schedule else 1
        grouped = self.grouped if self.grouped is not None else rows < GROUP_BELOW
        return max(1, -(-sms // rows)) if grouped else 1

    def action_toggle_group(self) -> None:
        rows = max(self.size.height - HEAD - 1, 1)
        self.grouped = self._per_row(rows) == 1
        self.top = 0

    def render(self) -> Text:
        s = self.schedule
        if s is None:
            return Text("No block schedule: toggle the block_sched probe on a Triton kernel.")
        width = max(self.size.width - LABEL - STATS, 10)
        rows = max(self.size.height - HEAD - 1, 1)
        out = Text(no_wrap=True, overflow="crop")
        out.append_text(self._summary(s))
        lo, hi = self.window(s.duration_ns)
        edges = np.linspace(lo, hi, width + 1)
        mid = (edges[:-1] + edges[1:]) / 2
        starts = np.searchsorted(s.smid, s.per_sm.sm)
        stops = np.searchsorted(s.smid, s.per_sm.sm, side="right")
        per = self._per_row(rows)
        groups = -(-s.sms // per)
        for g in range(self.top, min(self.top + rows, groups)):
            i, j = g * per, min((g + 1) * per, s.sms)  # SMs i..j-1, their blocks a..b
            first, last = int(s.per_sm.sm[i]), int(s.per_sm.sm[j - 1])
            label = f"SM {first:>4}   │" if per == 1 else f"SM {first:>3}-{last:<3}│"
            out.append(f"\n{label}", style="dim")
            a, b = starts[i], stops[j - 1]
            conc = int(s.per_sm.concurrency[i:j].sum())
            self._row(out, s.start[a:b], s.end[a:b], s.wave[a:b], mid, conc)
            busy = s.per_sm.busy_ns[i:j].sum() / max(s.duration_ns * (j - i), 1)
            sched = s.per_sm.sched_ns[i:j].sum() / max(s.per_sm.exec_ns[i:j].sum(), 1)
            out.append(f" busy {busy:4.0%} sched {sched:4.1%}", style="dim")
        out.append("\n")
        out.append_text(self._durations(s, lo, hi, self.size.width))
        return out

    @staticmethod
    def _row(out: Text, start, end, wave, mid, conc: int) -> None:
        resident = (start[None, :] <= mid[:, None]) & (end[None, :] > mid[:, None])
        counts = resident.sum(axis=1)
        first = np.where(counts > 0, np.argmax(resident, axis=1), -1)
        for n, k in zip(counts, first, strict=True):
            if n == 0:
                out.append(" ")
                continue
            level = LEVELS[max(1, round(8 * n / max(conc, 1)))]
            out.append(level, style=WAVE_STYLES[int(wave[k]) % len(WAVE_STYLES)])

    @staticmethod
    def _summary(s: Schedule) -> Text:
        exec_ns = int(s.per_sm.exec_ns.sum())
        sched_ns = int(s.per_sm.sched_ns.sum())
        unit = _unit(s.duration_ns)

        def _ms(ns: float) -> str:
            return _in(ns, unit)

        waves = int(s.wave.max()) + 1
        head = Text(no_wrap=True, overflow="crop")
        head.append(f"{s.blocks} blocks on {s.sms} SMs, {waves} wave{'s' if waves != 1 else ''}")
        head.append("  kernel wall time ")
        head.append(_ms(s.duration_ns), "bold")
        head.append(f"\nblock time {_ms(exec_ns)} ({s.blocks} blocks' durations summed)")
        head.append(f"  sched {_ms(sched_ns)} ({sched_ns / max(exec_ns, 1):.1%})")
        style = "bold red" if s.tail_frac > 0.2 else ""
        head.append(
            f"\ntail {_ms(s.tail_ns)}: the last {s.tail_frac:.0%} of the wall time, some SMs idle",
            style,
        )
        return head

    @staticmethod
    def _durations(s: Schedule, lo: float, hi: float, width: int) -> Text:
        """The window's span, then the block durations: a histogram and as many of the
        percentiles as fit ``width`` whole (at 80 columns a cut one read ``p99 5``)."""
        p = s.duration_pct
        unit = _unit(s.duration_ns)  # (the summary's)

        def _ms(ns: float) -> str:
            return _in(ns, unit)

        text = Text(no_wrap=True, overflow="crop")
        text.append(f"{_ms(lo)} … {_ms(hi)}   ", "dim")
        text.append("block durations ")
        text.append(_spark(s.end - s.start), "bold #5fafff")
        for name, q in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)):
            part = f" {name} {_ms(p[q])}"
            if text.cell_len + len(part) > width:
                break
            text.append(part)
        return text


def _spark(durations: np.ndarray, bins: int = 12) -> str:
    """A one-line histogram of block durations (shortest on the left)."""
    counts, _ = np.histogram(durations, bins=bins)
    top = max(int(counts.max()), 1)
    return "".join(LEVELS[0 if c == 0 else max(1, round(8 * c / top))] for c in counts)
