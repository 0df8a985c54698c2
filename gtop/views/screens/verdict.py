"""The ``v`` screen: the verdict line in full (at 80 columns the line above the tabs is
cut before its fix): what held the GPU idle, the evidence, why, the usual fix, what the
window leaves out (a replay's compile, autotuning: once) and the predicted gains."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import Static

from gtop.analysis.diagnosis.gains import Prediction
from gtop.analysis.diagnosis.verdict import Verdict
from gtop.analysis.report.document import one_time_phase
from gtop.recordings.clipped import one_time
from gtop.views.screens.text_box import TextBoxScreen
from gtop.views.tabs.worker_panel import COMPUTING


def once_lines(source: Any) -> list[str]:
    """A replay's one-time phases (compilation, autotuning, checkpoints, evaluation),
    left out of its window as ``gtop report`` leaves them out, one line each with its
    cost, span and usual remedy; none live (they are found in a whole recording)."""
    if bool(getattr(source, "live", True)):
        return []
    phases = [one_time_phase(p, int(source.t_start)) for p in one_time(source.recording)]
    return [
        f"{p['name']} {p['seconds']:.2f} s, {p['from_s']:.2f}–{p['to_s']:.2f} s, {p['what']}. "
        f"Usual remedy: {p['remedy']}"
        for p in phases
    ]


def verdict_text(
    verdict: Verdict | None,
    line: str,
    gains: Sequence[Prediction] | None = (),
    once: Sequence[str] = (),
) -> Text:
    """``verdict`` as ``gtop report`` words it, the one-time phases left out of its
    window (``once``: :func:`once_lines`), and the fixes ranked by predicted gain (None:
    being computed); without a verdict, the line's reason why not."""
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
    if once:
        out.append("\n\nLeft out of this window, once", style="bold")
        out.append(" (gtop report's phases)\n")
        for item in once:
            out.append(f" - {item}\n")
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
        self,
        verdict: Verdict | None,
        line: str,
        gains: Sequence[Prediction] | None = (),
        once: Sequence[str] = (),
    ) -> None:
        text = verdict_text(verdict, line, gains, once)
        super().__init__(text, "why the GPU is idle · Esc closes")
        self.verdict, self.line, self.once = verdict, line, once
        self.pending = gains is None
        """The predicted gains are being computed (:meth:`show_gains` brings them)."""

    def show_gains(self, gains: Sequence[Prediction]) -> None:
        """The predicted gains, computed since the screen opened."""
        self.text = verdict_text(self.verdict, self.line, gains, self.once)
        self.pending = False
        if self.is_mounted:
            self.query_one(Static).update(self.text)
