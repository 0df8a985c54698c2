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

from gtop.analysis.kernels import kernel_labels
from gtop.analysis.kernels.cuda_activity import KernelRow
from gtop.views.fmt import units
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
    Column("Grid", 11, lambda r, share, rate: "varies" if r.grid_varies else units.dims(r.grid)),
    Column("Block", 9, lambda r, share, rate: units.dims(r.block)),
    Column("Regs", 4, lambda r, share, rate: str(r.registers)),
    Column("SMem", 8, lambda r, share, rate: units.size(r.static_smem + r.dynamic_smem)),
    Column("Stream", 6, lambda r, share, rate: ",".join(str(s) for s in r.streams)),
)
"""The numeric columns, in the order they give way (from the right) to a narrow table."""
MIN_NAME = 16
NAME_FLOOR = 32
"""The name column gives way to numeric columns beyond the first four down to this."""
ALWAYS = 4


def fit_columns(room: int, need: int, widths: list[int]) -> int:
    """How many of the numeric columns (``widths``, in order) show whole beside a name
    column that needs ``need`` cells, in a table ``room`` cells wide: the first
    :data:`ALWAYS` while the name keeps :data:`MIN_NAME`, the rest while it keeps
    :data:`NAME_FLOOR` (or ``need``, when less). A column that does not fit whole does
    not show, nor do those after it."""
    used = 2  # the name column's padding
    for i, w in enumerate(widths):
        floor = MIN_NAME if i < ALWAYS else min(need, NAME_FLOOR)
        if used + w + 2 + floor > room:
            return i
        used += w + 2
    return len(widths)


class KernelTable(Widget):
    """Kernels by name with their share of the GPU time, count, total and mean time,
    launches per second, and launch geometry.

    Rows come from :meth:`set_rows` (a :class:`KernelRow` list from the analysis layer);
    the widget only filters, sorts and draws them. Columns show whole or not at all
    (:func:`fit_columns`): the name column gives way to the first four numeric columns,
    then to more down to :data:`NAME_FLOOR`; the cursor stays on its kernel when rows
    are re-sorted or updated.
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
        """The table's width at the last redraw."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter kernels by name")
        yield RowTable()

    def on_resize(self) -> None:
        if self._width() != self._room:
            self._redraw_if_mounted()

    def set_rows(
        self, rows: list[KernelRow], span_ns: int = 0, known: Collection[str] = ()
    ) -> None:
        """The kernels, aggregated over ``span_ns`` (for launches per second); ``known``:
        every kernel name seen so far (rows or not), which labels tell apart."""
        self._rows = rows
        self._labels = kernel_labels.labels({r.name for r in rows} | set(known))
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

    def _width(self) -> int:
        """The table's room for columns (its width less the scrollbar)."""
        table = self.query_one(RowTable)
        return (table.size.width or self.size.width) - table.styles.scrollbar_size_vertical

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
        names = [r.demangled if self.full_names else self.label(r) for r in rows]
        numbers = [
            (col, TableColumn(label, max(col.width, len(label)), right=True))
            for col in NUMBERS
            for label in [col.label + (mark if col.label == sorted_label else "")]
        ]
        room = self._room = self._width()
        need = max([len(n) for n in names] + [MIN_NAME])
        shown = fit_columns(room, need, [c.width for _, c in numbers])
        numbers = numbers[:shown]
        width = max(MIN_NAME, min(need, room - sum(c.width + 2 for _, c in numbers) - 2))
        columns = [TableColumn("Kernel" + (mark if sorted_label == "Kernel" else ""), width)]
        columns += [c for _, c in numbers]
        total = sum(r.total_ns for r in self._rows) or 1
        cells = []
        for r, name in zip(rows, names, strict=True):
            share = r.total_ns / total
            rate = r.count / self._span_s if self._span_s > 0 else 0.0
            if self.full_names:
                cut = name if len(name) <= width else name[: width - 1] + "…"
            else:
                cut = kernel_labels.fit(name, width)
            cells.append([cut, *(c.cell(r, share, rate) for c, _ in numbers)])
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
