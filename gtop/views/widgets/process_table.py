"""The process table: sortable by any column, filterable, Enter drills into a process."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable

from gtop.views.fmt import values as fmt
from gtop.views.processes import COLUMN_KEYS, COLUMNS, ProcessRow, column, grouped, sort_rows

MIN_COMMAND_WIDTH = 12
"""The command column never gets narrower than this (the table then scrolls sideways)."""

EXITED_GLYPH = "✝"
"""Marks an exited process, so the state reads without colour too."""

SIDEWAYS = frozenset({"cursor_left", "cursor_right", "scroll_home", "scroll_end"})
"""DataTable actions of ←, →, Home and End."""

EXITED_STYLE = "dim italic"
"""Greys out an exited process's row (cells are styled as data, before CSS applies)."""


class ProcessTable(DataTable):
    """One row per process (see :mod:`gtop.views.processes`); row keys are pids."""

    DEFAULT_CSS = """
    ProcessTable { height: 1fr; }
    """

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
        Binding("s", "cycle_sort", "Sort"),
        Binding("S", "reverse_sort", "Reverse sort", show=False),
        Binding("t", "toggle_tree", "Tree/flat", show=False),
    ]

    sort_key: reactive[str] = reactive("gpu_mem")
    """Column the rows are sorted by (a key of :data:`~gtop.views.processes.COLUMNS`)."""

    sort_reverse: reactive[bool] = reactive(False)
    """Flip the column's natural direction (numbers descending, text ascending)."""

    filter_text: reactive[str] = reactive("")
    """Only rows whose command, user or pid contain this (case-insensitive)."""

    tree: reactive[bool] = reactive(True)
    """Each process under its parent (DataLoader workers, ranks under torchrun), its
    role beside its command; siblings and roots in sort order. False: one flat list."""

    class Chosen(Message):
        """The user pressed Enter (or clicked) on the row of process ``pid``."""

        def __init__(self, pid: int) -> None:
            super().__init__()
            self.pid = pid

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._rows: list[ProcessRow] = []
        self._columns_shown: tuple[tuple[str, int], ...] = ()
        """Labels and widths of the columns now shown."""
        self._cells_shown: dict[str, tuple[Text, ...]] = {}
        """Cells now shown, by row key, in display order."""

    def on_mount(self) -> None:
        self._rebuild()

    def on_resize(self) -> None:
        self._rebuild()

    def watch_show_vertical_scrollbar(self) -> None:
        """The scrollbar came or went without a resize: the command column takes the
        width now left (laid out before it came, the table scrolled sideways, and a
        snapshot under load caught it so)."""
        self._rebuild()

    def show_rows(self, rows: list[ProcessRow]) -> None:
        """Replace the data; the cursor stays on the same pid."""
        self._rows = rows
        self._rebuild()

    @property
    def visible_pids(self) -> list[int]:
        return [int(key.value) for key in self.rows]

    def _rebuild(self) -> None:
        """Show the filtered, sorted rows.

        When the same pids stay in the same order under the same columns, only the cells
        that changed are updated: re-adding rows makes the table measure every cell.
        """
        if not self.is_mounted:
            return
        shown = sort_rows(
            [r for r in self._rows if not self.filter_text or r.matches(self.filter_text)],
            self.sort_key,
            self.sort_reverse,
        )
        placed = grouped(shown) if self.tree else [(0, row) for row in shown]
        cells = {str(row.pid): self._cells(row, depth) for depth, row in placed}
        layout = self._column_layout(list(cells.values()))
        if layout == self._columns_shown and list(cells) == list(self._cells_shown):
            for key, row_cells in cells.items():
                for col, new, old in zip(COLUMNS, row_cells, self._cells_shown[key]):
                    if new.plain != old.plain or new.style != old.style:
                        self.update_cell(key, col.key, new)
        else:
            keep = self._cursor_pid()
            self.clear(columns=True)
            for col, (label, width) in zip(COLUMNS, layout):
                self.add_column(label, key=col.key, width=width)
            for key, row_cells in cells.items():
                self.add_row(*row_cells, key=key)
            if keep is not None and str(keep) in self.rows:
                self.move_cursor(row=self.get_row_index(str(keep)), scroll=False)
        self._columns_shown, self._cells_shown = layout, cells

    def _cursor_pid(self) -> int | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return int(key.value) if key.value is not None else None

    @staticmethod
    def _cells(row: ProcessRow, depth: int = 0) -> tuple[Text, ...]:
        pid = f"{EXITED_GLYPH}{row.pid}" if row.exited else str(row.pid)
        gpus = ",".join(str(g) for g in row.gpus) if row.gpus else "–"
        values = (
            (pid, "right"),
            (row.user[:12], "left"),
            (gpus, "left"),
            (fmt.size(row.gpu_mem) if row.gpus else "–", "right"),
            (fmt.pct(row.sm_util) if row.gpus else "–", "right"),
            (fmt.pct(row.cpu_pct), "right"),
            (fmt.size(row.rss), "right"),
            (fmt.num(row.threads), "right"),
            (_command(row, depth), "left"),
        )
        style = EXITED_STYLE if row.exited else ""
        return tuple(
            Text(v, style=style, justify=j, no_wrap=True, overflow="ellipsis") for v, j in values
        )

    def _column_layout(self, cells: list[tuple[Text, ...]]) -> tuple[tuple[str, int], ...]:
        """Headers, with ▲/▼ on the sorted column (a shape, so it reads without colour),
        and widths.

        A column is as wide as the widest cell it has shown (it never shrinks, so that
        values changing by a digit do not re-lay the table out), except the command,
        which takes the rest of the width and is cut with an ellipsis (the process screen
        shows it whole).
        """
        arrow = "▲" if column(self.sort_key).descending == self.sort_reverse else "▼"
        labels = [f"{c.label}{arrow}" if c.key == self.sort_key else c.label for c in COLUMNS]
        old = [width for _, width in self._columns_shown] or [0] * len(COLUMNS)
        widths = [
            max([len(label), old[i], *(row[i].cell_len for row in cells)])
            for i, label in enumerate(labels)
        ]
        pad = 2 * self.cell_padding
        rest = self.scrollable_content_region.width - sum(w + pad for w in widths[:-1]) - pad
        widths[-1] = max(MIN_COMMAND_WIDTH, rest)
        return tuple(zip(labels, widths))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Sideways keys go to the app (replay seeking) when there is nothing to scroll."""
        if action in SIDEWAYS and self.max_scroll_x == 0:
            return False
        return super().check_action(action, parameters)

    def watch_sort_key(self) -> None:
        self._rebuild()

    def watch_sort_reverse(self) -> None:
        self._rebuild()

    def watch_filter_text(self) -> None:
        self._rebuild()

    def action_cycle_sort(self) -> None:
        """Sort by the next column."""
        index = COLUMN_KEYS.index(self.sort_key)
        self.sort_reverse = False
        self.sort_key = COLUMN_KEYS[(index + 1) % len(COLUMN_KEYS)]

    def action_reverse_sort(self) -> None:
        self.sort_reverse = not self.sort_reverse

    def watch_tree(self) -> None:
        self._rebuild()

    def action_toggle_tree(self) -> None:
        """Group processes under their parents, or list them flat."""
        self.tree = not self.tree

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """Clicking a header sorts by it; clicking the sorted header reverses it."""
        event.stop()
        key = str(event.column_key.value)
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_reverse = False
            self.sort_key = key

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Chosen(int(event.row_key.value)))


def _command(row: ProcessRow, depth: int) -> str:
    """The command cell: indented under its parent, with its role when it has one."""
    lead = "  " * (depth - 1) + "└ " if depth else ""
    role = f"[{row.role}] " if row.role else ""
    return f"{lead}{role}{row.short_command}"
