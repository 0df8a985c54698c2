"""Process-screen tab: the focused process's descendants (DataLoader workers and such)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gtop.core.model import Model
from gtop.views.processes import RECENT_S, descendants, process_rows
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import recent_label
from gtop.views.widgets.process_table import ProcessTable

NO_CHILDREN = (
    "no child processes seen: this process started none while gtop watched "
    "(DataLoader workers and compile workers show here)"
)


class ProcessChildren(Vertical):
    """Every known descendant of ``pid``, sortable like the overview's table, under a line
    naming the window of its numbers; or one line saying there are none."""

    DEFAULT_CSS = """
    ProcessChildren { height: 1fr; }
    ProcessChildren > .panel-note { height: auto; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.note = Static(NO_CHILDREN, classes="panel-note")
        self.table = ProcessTable()
        self.table.set_reactive(ProcessTable.sort_key, "pid")

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.table

    def show(self, model: Model) -> None:
        kids = {int(info["pid"]) for _, info in descendants(model, self.pid)}
        self.table.show_rows([r for r in process_rows(model, include=kids) if r.pid in kids])
        label = recent_label(model, getattr(self.app, "source", None), RECENT_S)
        self.note.update(f"children, {label} (the newest sample of each)" if kids else NO_CHILDREN)
        self.table.display = bool(kids)


PANEL = PanelSpec(
    "Children",
    ProcessChildren,
    order=20,
    about=(
        "Processes this one started (DataLoader workers, compile workers) with their CPU, "
        "memory and GPU use."
    ),
)
