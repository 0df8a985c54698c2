"""Compare two recordings (``gtop replay A --compare B``): where each one's GPU time went,
side by side, cause by cause, in plain words with the code beside.

Each recording is summarised as ``gtop report`` summarises it (its GPU section and
verdict, over the same steady-state window the report uses), on a worker thread; the
screen shows "computing…" meanwhile. ``c`` or Esc goes back to the replay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gtop.analysis.causes import LABELS, PHRASES, Cause
from gtop.recordings.reader import Recording, RecordingError
from gtop.recordings.report_data import read_report
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE


def summary(path: Path) -> dict[str, Any]:
    """The report of ``path`` (what the comparison reads of it)."""
    with Recording(path) as rec:
        return read_report(rec)


def _unit(report: dict[str, Any]) -> dict[str, Any] | None:
    """The busiest unit of the report's GPU section (most on-GPU time), or None."""
    units = list((report.get("gpu") or {}).values())
    if not units:
        return None
    return max(units, key=lambda u: sum(u.get("on_s", {}).values()))


COL = 16
"""Cells per recording's column (two fit beside the cause names in 80 columns)."""


def _seconds(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def comparison(names: tuple[str, str], reports: tuple[dict[str, Any], dict[str, Any]]) -> Text:
    """The side-by-side text: GAR and verdict of each, then one line per cause."""
    units = [_unit(r) for r in reports]
    out = Text()
    out.append(f"A: {names[0]}\nB: {names[1]}\n\n")
    out.append(f"{'':<32}{'A':>{COL}}  {'B':>{COL}}  B - A\n", style="bold")
    cells = []
    for unit in units:
        cells.append("no CUDA activity" if unit is None else f"{100 * unit['gar']:.1f}%")
    out.append(f"{'GPU busy (GAR)':<32}{cells[0]:>{COL}}  {cells[1]:>{COL}}\n", style="bold")
    window = [_seconds(u["duration_s"]) if u else "-" for u in units]
    out.append(f"{'window (steady state)':<32}{window[0]:>{COL}}  {window[1]:>{COL}}\n\n")
    for cause in Cause:
        code = LABELS[cause]
        shares = []
        for unit in units:
            if unit is None:
                shares.append(None)
                continue
            sec = {**unit.get("on_s", {}), **unit.get("off_s", {})}.get(code, 0.0)
            shares.append((sec, sec / unit["duration_s"] if unit["duration_s"] else 0.0))
        if all(s is None or s[0] <= 0 for s in shares):
            continue
        out.append(f"{CAUSE_GLYPH[cause]} ", style=CAUSE_STYLE[cause])
        out.append(f"{PHRASES[cause]:<19} {code:<10}")
        for s in shares:
            text = "-" if s is None else f"{100 * s[1]:5.1f}% {_seconds(s[0]):>9}"
            out.append(f"{text:>{COL}}  ")
        if all(s is not None for s in shares):
            delta = 100 * (shares[1][1] - shares[0][1])  # type: ignore[index]
            out.append(f"{delta:+5.1f} pt", style="bold" if abs(delta) >= 5 else "dim")
        out.append("\n")
    out.append("\n")
    for name, report in zip(names, reports, strict=True):
        verdict = report.get("verdict") or {}
        headline = verdict.get("headline") if isinstance(verdict, dict) else None
        out.append(f"{name}: ", style="bold")
        out.append(f"{headline or 'no verdict (no CUDA activity recorded)'}\n")
    return out


class CompareScreen(Screen[None]):
    """Two recordings' breakdowns side by side (module docstring)."""

    DEFAULT_CSS = """
    CompareScreen > VerticalScroll { padding: 0 1; }
    CompareScreen Static { text-wrap: nowrap; text-overflow: ellipsis; }
    """
    BINDINGS = [Binding("escape,c", "dismiss", "Back to the replay")]

    def __init__(self, a: Path, b: Path) -> None:
        super().__init__()
        self.paths = (a, b)
        self.body = Static("computing… (reading both recordings as `gtop report` does)")
        self.result: Text | None = None
        """The comparison once drawn (tests read it)."""

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = f"compare {self.paths[0].name} with {self.paths[1].name}"
            yield self.body

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, exit_on_error=False)
    def _load(self) -> None:
        try:
            reports = (summary(self.paths[0]), summary(self.paths[1]))
            text = comparison((self.paths[0].name, self.paths[1].name), reports)
        except (RecordingError, ValueError, OSError) as exc:
            text = Text(f"cannot compare: {exc}")
        self.app.call_from_thread(self._show, text)

    def _show(self, text: Text) -> None:
        self.result = text
        self.body.update(text)
