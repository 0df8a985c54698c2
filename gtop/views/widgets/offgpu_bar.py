"""The off-GPU breakdown bar: GAR, one stacked bar of the window by cause, and each
cause in plain words with its code, share and absolute time."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis.attribution.causes import LABELS, PHRASES, Cause
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE, style

COLUMN = 52
"""Cells per cause entry: glyph, plain words, code, share, time."""


def _seconds(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


class OffGpuBar(Widget, can_focus=True):
    """Breakdown of one unit's window (the entry
    :func:`gtop.analysis.report.gpu_report.unit_summary`
    returns: ``gar``, ``duration_s``, ``on``, ``off``, ``exact``)."""

    DEFAULT_CSS = """
    OffGpuBar {
        height: auto;
        min-height: 3;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """
    BINDINGS = [Binding("s", "toggle_sort", "Sort causes")]

    summary: reactive[dict[str, Any] | None] = reactive(None, layout=True)
    """The unit's numbers; None before any data."""
    color: reactive[bool] = reactive(True)
    """Colours on; off for ``--no-color`` (glyphs alone tell the causes apart)."""
    max_lines: reactive[int] = reactive(0, layout=True)
    """Most cause lines drawn (0: all); the rest are summed on one line."""
    by_size: reactive[bool] = reactive(True, layout=True)
    """List causes largest first (else in cause order)."""

    def render(self) -> Text:
        s = self.summary
        if not s:
            return Text("no GPU work in the window")
        width = max(10, self.size.width)
        seconds = {**s["on"], **s["off"]}
        total = s["duration_s"] or 1.0
        window = _seconds(s["duration_s"])
        if s["gar"] is None:
            head = Text(f"nothing traced in the window {window} (kernel sampling)")
        else:
            head = Text(f"GPU busy {s['gar'] * 100:5.1f}% (GAR)   window {window}")
        if s.get("untraced_s"):
            traced = s["traced_s"] / s["duration_s"]
            head.append(f", {traced:.0%} traced (the rest estimated)")
        if not s.get("exact", True):
            head.append("   APPROXIMATE (no CUPTI)", "bold" if self.color else "")
        bar = Text()
        acc, used = 0.0, 0
        for cause in Cause:
            acc += seconds.get(LABELS[cause], 0.0)
            cells = round(acc / total * width) - used
            used += cells
            bar.append(CAUSE_GLYPH[cause] * cells, style(CAUSE_STYLE[cause], self.color))
        rows = [c for c in Cause if seconds.get(LABELS[c], 0.0) > 0]
        if self.by_size:
            rows.sort(key=lambda c: -seconds[LABELS[c]])
        lines = [head, bar]
        per_line = max(1, width // COLUMN)
        hidden: list[Cause] = []
        if self.max_lines and len(rows) > self.max_lines * per_line:
            cut = (self.max_lines - 1) * per_line
            rows, hidden = rows[:cut], rows[cut:]
        for i in range(0, len(rows), per_line):
            line = Text()
            for cause in rows[i : i + per_line]:
                sec = seconds[LABELS[cause]]
                line.append(CAUSE_GLYPH[cause], style(CAUSE_STYLE[cause], self.color))
                line.append(
                    f" {PHRASES[cause]:<19} {LABELS[cause]:<10} {sec / total * 100:5.1f}% "
                    f"{_seconds(sec):>9}"
                )
                line.append(" " * (COLUMN - 48))
            lines.append(line)
        if hidden:
            rest = sum(seconds[LABELS[c]] for c in hidden)
            names = ", ".join(PHRASES[c] for c in hidden)
            lines.append(Text(f"  +{len(hidden)} more {rest / total * 100:5.1f}%: {names}"))
        return Text("\n").join(lines)

    def action_toggle_sort(self) -> None:
        self.by_size = not self.by_size
