"""The API table: CUDA runtime/driver calls per host thread, with rate and time inside."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis.kernels.cuda_activity import ApiRow
from gtop.views.fmt import units
from gtop.views.widgets.row_table import Column, RowTable

SORTS: tuple[tuple[str, str], ...] = (
    ("total_ns", "time"),
    ("calls", "calls"),
    ("max_ns", "max"),
    ("tid", "thread"),
)
COLUMNS = ("Thread", "Call", "Class", "Calls/s", "Time", "% wall", "Max")
TEXT = frozenset({"Call", "Class"})
"""Left-justified columns (the rest are numbers)."""


class ApiTable(Widget):
    """One row per (thread, API function), from :meth:`set_rows` (:class:`ApiRow` list).

    Empty, with a hint, when API tracing is off (the agent's default mode leaves it off
    to keep its cost low).
    """

    DEFAULT_CSS = """
    ApiTable { height: 1fr; }
    ApiTable > RowTable { height: 1fr; }
    """

    BINDINGS = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("r", "reverse", "Reverse"),
    ]

    sort_index: reactive[int] = reactive(0)
    """Which of :data:`SORTS` orders the rows."""
    descending: reactive[bool] = reactive(True)
    """Largest first."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[ApiRow] = []
        self._shown: list[ApiRow] = []

    def compose(self) -> ComposeResult:
        yield RowTable()

    def on_mount(self) -> None:
        self._redraw()

    def set_rows(self, rows: list[ApiRow]) -> None:
        self._rows = rows
        if self.is_mounted:
            self._redraw()

    @property
    def shown(self) -> list[ApiRow]:
        return list(self._shown)

    def _redraw(self) -> None:
        key = SORTS[self.sort_index][0]
        self._shown = sorted(self._rows, key=lambda r: getattr(r, key), reverse=self.descending)
        rows = [
            (
                str(r.tid),
                r.name,
                r.api_class.lower(),
                units.rate(r.calls_per_s),
                units.duration(r.total_ns),
                f"{r.time_pct:.1f}",
                units.duration(r.max_ns),
            )
            for r in self._shown
        ]
        columns = [
            Column(label, max([len(label), *(len(r[i]) for r in rows)]), right=label not in TEXT)
            for i, label in enumerate(COLUMNS)
        ]
        self.query_one(RowTable).set_table(columns, rows)
        self.border_subtitle = (
            f"sort: {SORTS[self.sort_index][1]}"
            if self._rows
            else "no API records: trace in full mode to see them"
        )

    def watch_sort_index(self) -> None:
        if self.is_mounted:
            self._redraw()

    def watch_descending(self) -> None:
        if self.is_mounted:
            self._redraw()

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)

    def action_reverse(self) -> None:
        self.descending = not self.descending
