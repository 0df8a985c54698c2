"""The ``v`` screen: the verdict line in full (at 80 columns the line above the tabs is
cut before its fix): what held the GPU idle, the evidence, why, and the usual fix."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from gtop.analysis.verdict import Verdict


def verdict_text(verdict: Verdict | None, line: str) -> Text:
    """``verdict`` as ``gtop report`` words it; without one, the line's reason why not."""
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
    return out


class VerdictScreen(ModalScreen[None]):
    """The verdict in a scrollable box; Esc, v or q closes it."""

    DEFAULT_CSS = """
    VerdictScreen { align: center middle; }
    VerdictScreen > VerticalScroll {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    BINDINGS = [Binding("escape,v,q", "dismiss", "Close", show=False)]

    def __init__(self, verdict: Verdict | None, line: str) -> None:
        super().__init__()
        self.text = verdict_text(verdict, line)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "why the GPU is idle · Esc closes"
            yield Static(self.text)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
