"""A modal box of text over the screen, scrollable, closed by Esc or q (the legend, the
verdict in full)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class TextBoxScreen(ModalScreen[None]):
    """``text`` in a box titled ``title``; subclasses bind their closing keys."""

    DEFAULT_CSS = """
    TextBoxScreen { align: center middle; }
    TextBoxScreen > VerticalScroll {
        width: 100; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, text: Text, title: str) -> None:
        super().__init__()
        self.text = text
        self.title_text = title

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = self.title_text
            yield Static(self.text)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
