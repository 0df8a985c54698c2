"""The live kernel table: one row per kernel name, sortable and filterable."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import DataTable, Input

from gtop.analysis.cuda_activity import KernelRow
from gtop.views.fmt import units

SORTS: tuple[tuple[str, str], ...] = (
    ("total_ns", "total"),
    ("count", "count"),
    ("mean_ns", "avg"),
    ("max_ns", "max"),
    ("short", "name"),
)
COLUMNS = ("Kernel", "Count", "Total", "Avg", "Max", "Grid", "Block", "Regs", "SMem", "Stream")


class KernelTable(Widget):
    """Kernels by name with count, total/average/max time and launch geometry.

    Rows come from :meth:`set_rows` (a :class:`KernelRow` list from the analysis layer);
    the widget only filters, sorts and draws them.
    """

    DEFAULT_CSS = """
    KernelTable { height: 1fr; }
    KernelTable > Input { dock: top; display: none; height: 3; }
    KernelTable.-filtering > Input { display: block; }
    KernelTable > DataTable { height: 1fr; }
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
    """Show demangled full names instead of the short form."""

    class Selected(Message):
        """The user picked a kernel (Enter on a row)."""

        def __init__(self, row: KernelRow) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[KernelRow] = []
        self._shown: list[KernelRow] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter kernels by name")
        yield DataTable(cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns(*COLUMNS)

    def set_rows(self, rows: list[KernelRow]) -> None:
        self._rows = rows
        self._redraw()

    @property
    def shown(self) -> list[KernelRow]:
        """The rows on screen, in screen order."""
        return list(self._shown)

    def _redraw(self) -> None:
        needle = self.filter_text.lower()
        rows = [r for r in self._rows if needle in r.demangled.lower()]
        key = SORTS[self.sort_index][0]
        rows.sort(key=lambda r: getattr(r, key), reverse=self.descending)
        self._shown = rows
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        for r in rows:
            table.add_row(
                r.demangled if self.full_names else r.short,
                str(r.count),
                units.duration(r.total_ns),
                units.duration(r.mean_ns),
                units.duration(r.max_ns),
                units.dims(r.grid),
                units.dims(r.block),
                str(r.registers),
                units.size(r.static_smem + r.dynamic_smem),
                ",".join(str(s) for s in r.streams),
            )
        if rows:
            table.move_cursor(row=min(cursor, len(rows) - 1))
        sort_name = SORTS[self.sort_index][1]
        self.border_subtitle = f"sort: {sort_name} {'↓' if self.descending else '↑'}"

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
        self.query_one(DataTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if 0 <= event.cursor_row < len(self._shown):
            self.post_message(self.Selected(self._shown[event.cursor_row]))
