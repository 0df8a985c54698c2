"""The ``v`` screen: the verdict line in full (at 80 columns the line above the tabs is
cut before its fix): what held the GPU idle, the evidence, why, and the usual fix."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from gtop.analysis.diagnosis.gains import Prediction
from gtop.analysis.diagnosis.verdict import Verdict
from gtop.views.screens.text_box import TextBoxScreen
from gtop.views.tabs.worker_panel import COMPUTING


def verdict_text(
    verdict: Verdict | None, line: str, gains: Sequence[Prediction] | None = ()
) -> Text:
    """``verdict`` as ``gtop report`` words it, with the fixes ranked by predicted gain
    (None: being computed); without one, the line's reason why not."""
    if verdict is None:
        return Text(line or "Why idle: not computed yet")
    out = Text(verdict.headline + "\n\n", style="bold")
    out.append("Evidence\n", style="bold")
    for item in verdict.evidence:
        out.append(f" - {item}\n")
    out.append("\nWhy: ", style="bold")
    out.append(verdict.explanation.split(" Usual fix:")[0] + "\n")  # the fix comes next
    out.append("Usual fix: ", style="bold")
    out.append(verdict.fix)
    if gains is None:
        out.append("\n\nPredicted gains", style="bold")
        out.append(f": {COMPUTING}\n")
    elif gains:
        out.append("\n\nPredicted gains", style="bold")
        out.append(" (this window replayed with each fix, ranked)\n")
        for p in gains:
            out.append(f" - {p.line()}\n")
    return out


class VerdictScreen(TextBoxScreen):
    """The verdict in a scrollable box; Esc, v or q closes it."""

    BINDINGS = [Binding("escape,v,q", "dismiss", "Close", show=False)]

    def __init__(
        self, verdict: Verdict | None, line: str, gains: Sequence[Prediction] | None = ()
    ) -> None:
        super().__init__(verdict_text(verdict, line, gains), "why the GPU is idle · Esc closes")
        self.verdict, self.line = verdict, line
        self.pending = gains is None
        """The predicted gains are being computed (:meth:`show_gains` brings them)."""

    def show_gains(self, gains: Sequence[Prediction]) -> None:
        """The predicted gains, computed since the screen opened."""
        self.text = verdict_text(self.verdict, self.line, gains)
        self.pending = False
        if self.is_mounted:
            self.query_one(Static).update(self.text)
