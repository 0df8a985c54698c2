"""Compare two recordings (``gtop replay A --compare B``): where each one's GPU time went,
side by side, cause by cause, in plain words with the code beside.

The comparison is ``gtop report A B``'s (:mod:`gtop.analysis.report.compare`: the same
reports, window and lines), read on a worker thread; the screen shows "computing…"
meanwhile and colours each cause as the timelines do. ``c`` or Esc goes back to the
replay.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gtop.analysis.attribution.causes import Cause
from gtop.analysis.report.compare import compare_lines, compare_reports
from gtop.recordings.reader import Recording, RecordingError
from gtop.recordings.report_data import read_pair
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE

CHROME = 4
"""Columns the screen takes beside the text: padding, vertical scrollbar."""


def comparison(a: Path, b: Path, width: int) -> Text:
    """The side-by-side text of ``a`` and ``b`` in ``width`` columns, causes coloured."""
    with Recording(a) as rec_a, Recording(b) as rec_b:
        doc = compare_reports((a.name, b.name), read_pair((rec_a, rec_b)))
    out = Text()
    for line in compare_lines(doc, width, CAUSE_GLYPH):
        for text, tag in line:
            out.append(text, style=CAUSE_STYLE[tag] if isinstance(tag, Cause) else tag or "")
        out.append("\n")
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
        self._load(self.app.size.width - CHROME)

    @work(thread=True, exit_on_error=False)
    def _load(self, width: int) -> None:
        try:
            text = comparison(*self.paths, width)
        except (RecordingError, ValueError, OSError) as exc:
            text = Text(f"cannot compare: {exc}")
        self.app.call_from_thread(self._show, text)

    def _show(self, text: Text) -> None:
        self.result = text
        self.body.update(text)
