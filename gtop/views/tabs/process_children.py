"""Process-screen tab: the focused process's descendants (DataLoader workers and such)."""

from __future__ import annotations

from gtop.core.model import Model
from gtop.views.processes import descendants, process_rows
from gtop.views.tabs.panels import register_process_panel
from gtop.views.widgets.process_table import ProcessTable


class ProcessChildren(ProcessTable):
    """Every known descendant of ``pid``, sortable like the overview's table."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.set_reactive(ProcessTable.sort_key, "pid")

    def show(self, model: Model) -> None:
        kids = {int(info["pid"]) for _, info in descendants(model, self.pid)}
        self.show_rows([r for r in process_rows(model, include=kids) if r.pid in kids])


register_process_panel(
    "Children",
    ProcessChildren,
    order=20,
    about=(
        "Processes this one started (DataLoader workers, compile workers) with their CPU, "
        "memory and GPU use."
    ),
)
