"""The live kernel table: one row per kernel name, sortable and filterable."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input

from gtop.analysis.cuda_activity import KernelRow
from gtop.views.fmt import kernel_names, units
from gtop.views.widgets.row_table import Column as TableColumn
from gtop.views.widgets.row_table import RowTable

SORTS: tuple[tuple[str, str], ...] = (
    ("total_ns", "Total"),
    ("count", "Count"),
    ("mean_ns", "Mean"),
    ("max_ns", "Max"),
    ("short", "Kernel"),
)
"""Sort keys (a :class:`KernelRow` field) and the column that shows the sort mark."""


class Column(NamedTuple):
    label: str
    width: int
    cell: Callable[[KernelRow, float, float], str]
    """``cell(row, share of the GPU time, launches per second)``."""


NUMBERS: tuple[Column, ...] = (
    Column("%GPU", 5, lambda r, share, rate: f"{100 * share:.1f}"),
    Column("Count", 7, lambda r, share, rate: f"{r.count:,}"),
    Column("Total", 8, lambda r, share, rate: units.duration(r.total_ns)),
    Column("Mean", 8, lambda r, share, rate: units.duration(r.mean_ns)),
    Column("Launch/s", 8, lambda r, share, rate: units.rate(rate) if rate else "N/A"),
    Column("Max", 8, lambda r, share, rate: units.duration(r.max_ns)),
    Column("Grid", 11, lambda r, share, rate: units.dims(r.grid)),
    Column("Block", 9, lambda r, share, rate: units.dims(r.block)),
    Column("Regs", 4, lambda r, share, rate: str(r.registers)),
    Column("SMem", 8, lambda r, share, rate: units.size(r.static_smem + r.dynamic_smem)),
    Column("Stream", 6, lambda r, share, rate: ",".join(str(s) for s in r.streams)),
)
"""The numeric columns, the four that always show first (at 80 columns too)."""
ALWAYS = 4
MIN_NAME = 16


class KernelTable(Widget):
    """Kernels by name with their share of the GPU time, count, total and mean time,
    launches per second, and launch geometry.

    Rows come from :meth:`set_rows` (a :class:`KernelRow` list from the analysis layer);
    the widget only filters, sorts and draws them. The name column takes what the first
    four numeric columns leave (so they always show); the cursor stays on its kernel
    when rows are re-sorted or updated.
    """

    DEFAULT_CSS = """
    KernelTable { height: 1fr; }
    KernelTable > Input { dock: top; display: none; height: 3; }
    KernelTable.-filtering > Input { display: block; }
    KernelTable > RowTable { height: 1fr; }
    """

    BINDINGS = [
        Binding("s", "cycle_sort", "Sort"),
        Binding("r", "reverse", "Reverse"),
        Binding("slash", "filter", "Filter"),
        Binding("f", "toggle_full", "Full name"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    sort_index: reactive[int] = reactive(0)
    """Which of :data:`SORTS` orders the rows."""
    descending: reactive[bool] = reactive(True)
    """Largest first (names: Z to A)."""
    filter_text: reactive[str] = reactive("")
    """Case-insensitive substring a kernel's demangled name must contain."""
    full_names: reactive[bool] = reactive(False)
    """Show demangled full names (cut to the name column) instead of the short form."""

    class Selected(Message):
        """The user picked a kernel (Enter on a row)."""

        def __init__(self, row: KernelRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[KernelRow] = []
        self._shown: list[KernelRow] = []
        self._labels: Mapping[str, str] = {}
        self._span_s = 0.0
        self._room = 0
        """The name column's room at the last redraw."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter kernels by name")
        yield RowTable()

    def on_resize(self) -> None:
        if self._name_width() != self._room:  # the name column's width changed
            self._redraw_if_mounted()

    def set_rows(
        self, rows: list[KernelRow], span_ns: int = 0, known: Collection[str] = ()
    ) -> None:
        """The kernels, aggregated over ``span_ns`` (for launches per second); ``known``:
        every kernel name seen so far (rows or not), which labels tell apart."""
        self._rows = rows
        self._labels = kernel_names.labels({r.name for r in rows} | set(known))
        self._span_s = span_ns / 1e9
        self._redraw()

    @property
    def shown(self) -> list[KernelRow]:
        """The rows on screen, in screen order."""
        return list(self._shown)

    def label(self, row: KernelRow) -> str:
        """The row's name as the table shows it (short, told apart from namesakes)."""
        return self._labels.get(row.name, row.short)

    def select(self, name: str) -> KernelRow | None:
        """Put the cursor on kernel ``name`` (clearing a filter that hides it)."""
        if not any(r.name == name for r in self._shown):
            self.action_clear_filter()
        table = self.query_one(RowTable)
        for i, r in enumerate(self._shown):
            if r.name == name:
                table.move_cursor(i)
                return r
        return None

    def _name_width(self) -> int:
        table = self.query_one(RowTable)
        room = (table.size.width or self.size.width) - table.styles.scrollbar_size_vertical
        fixed = sum(c.width + 2 for c in NUMBERS[:ALWAYS]) + 2  # + the name's padding
        return max(MIN_NAME, room - fixed)

    def _redraw(self) -> None:
        needle = self.filter_text.lower()
        rows = [r for r in self._rows if needle in r.demangled.lower()]
        key, sorted_label = SORTS[self.sort_index]
        rows.sort(key=lambda r: getattr(r, key), reverse=self.descending)
        table = self.query_one(RowTable)
        keep = (
            self._shown[table.cursor_row].name if 0 <= table.cursor_row < len(self._shown) else None
        )
        self._shown = rows
        mark = " ▼" if self.descending else " ▲"
        width = self._room = self._name_width()
        names = [r.demangled if self.full_names else self.label(r) for r in rows]
        if not self.full_names:
            width = min(width, max([len(n) for n in names] + [MIN_NAME]))
        columns = [TableColumn("Kernel" + (mark if sorted_label == "Kernel" else ""), width)]
        for col in NUMBERS:
            label = col.label + (mark if col.label == sorted_label else "")
            columns.append(TableColumn(label, max(col.width, len(label)), right=True))
        total = sum(r.total_ns for r in self._rows) or 1
        cells = []
        for r, name in zip(rows, names, strict=True):
            share = r.total_ns / total
            rate = r.count / self._span_s if self._span_s > 0 else 0.0
            cut = name if len(name) <= width else name[: width - 1] + "…"
            cells.append([cut, *(c.cell(r, share, rate) for c in NUMBERS)])
        table.set_table(columns, cells)
        if rows:
            table.move_cursor(next((i for i, r in enumerate(rows) if r.name == keep), 0))
        self.border_subtitle = f"sort: {sorted_label} {mark.strip()}"

    def watch_sort_index(self) -> None:
        self._redraw_if_mounted()

    def watch_descending(self) -> None:
        self._redraw_if_mounted()

    def watch_filter_text(self) -> None:
        self._redraw_if_mounted()

    def watch_full_names(self) -> None:
        self._redraw_if_mounted()

    def _redraw_if_mounted(self) -> None:
        if self.is_mounted:
            self._redraw()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape belongs to the screen (back) unless a filter is open or set."""
        if action == "clear_filter":
            return self.has_class("-filtering") or bool(self.filter_text)
        return True

    def action_cycle_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(SORTS)
        self.descending = SORTS[self.sort_index][0] != "short"

    def action_reverse(self) -> None:
        self.descending = not self.descending

    def action_toggle_full(self) -> None:
        self.full_names = not self.full_names

    def action_filter(self) -> None:
        self.add_class("-filtering")
        self.query_one(Input).focus()

    def action_clear_filter(self) -> None:
        self.query_one(Input).value = ""
        self.filter_text = ""
        self.remove_class("-filtering")
        self.query_one(RowTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(RowTable).focus()

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self._shown):
            self.post_message(self.Selected(self._shown[event.cursor_row]))
