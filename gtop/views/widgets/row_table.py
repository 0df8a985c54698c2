"""A read-only table of text rows with a row cursor, drawn line by line.

Textual's DataTable renders every cell through Rich and measures every cell of every
row it is given: opening the Kernels tab (56 kernels x 12 columns) took ~100 ms of the
UI thread on the 2-core VM, most of the tab switch. Here a row is pre-formatted text:
:meth:`RowTable.render_line` draws only the lines on screen, each one string with one
style, so a redraw costs about a millisecond however many rows there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

PAD = 1
"""Spaces either side of a cell (as DataTable's default)."""


@dataclass(frozen=True)
class Column:
    label: str
    width: int
    """Cells are cut or padded to this many terminal cells."""
    right: bool = False
    """Right-justified (numbers)."""


def fit(text: str, width: int, right: bool) -> str:
    """``text`` cut or padded to ``width`` cells, on the left when ``right``."""
    if right and cell_len(text) < width:
        return " " * (width - cell_len(text)) + text
    return set_cell_size(text, width)


class RowTable(ScrollView, can_focus=True):
    """Rows of text under a header that stays put; ↑/↓ (and page keys) move the cursor,
    Enter posts :class:`RowSelected`."""

    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        &:focus {
            background-tint: $foreground 5%;
            & > .row-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .row-table--header { background-tint: $foreground 5%; }
        }
        &:dark > .row-table--even { background: $surface-darken-1 40%; }
        & > .row-table--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .row-table--header { background: ansi_bright_blue; color: ansi_default; }
        & > .row-table--even { background: $surface-lighten-1 50%; }
        & > .row-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    COMPONENT_CLASSES = {"row-table--header", "row-table--even", "row-table--cursor"}

    BINDINGS = [
        Binding("enter", "select", "Select", show=False),
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "cursor_to(0)", "First row", show=False),
        Binding("end", "cursor_to(-1)", "Last row", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, always_update=True)
    """The highlighted row (0 when there are none)."""

    class RowSelected(Message):
        """Enter, or a click on the highlighted row."""

        def __init__(self, table: RowTable, cursor_row: int) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns: tuple[Column, ...] = ()
        self._lines: list[str] = []
        self._header = ""
        self._styles: tuple[Style, Style, Style, Style] | None = None

    # --- content --------------------------------------------------------------------------
    def set_table(self, columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> None:
        """Replace the columns and rows (cells are text; the cursor keeps its index)."""
        self.columns = tuple(columns)
        pad = " " * PAD
        self._header = "".join(pad + fit(c.label, c.width, c.right) + pad for c in self.columns)
        self._lines = [
            "".join(
                pad + fit(cell, c.width, c.right) + pad
                for c, cell in zip(self.columns, row, strict=True)
            )
            for row in rows
        ]
        self.virtual_size = Size(cell_len(self._header), len(self._lines) + 1)
        self.cursor_row = min(self.cursor_row, max(0, len(self._lines) - 1))
        self.refresh()

    @property
    def row_count(self) -> int:
        return len(self._lines)

    def cells(self, index: int) -> list[str]:
        """Row ``index``'s cells as drawn, without their padding."""
        out, at = [], 0
        line = self._lines[index]
        for c in self.columns:
            out.append(line[at + PAD : at + PAD + c.width].strip())
            at += c.width + 2 * PAD
        return out

    def move_cursor(self, row: int) -> None:
        self.cursor_row = max(0, min(row, len(self._lines) - 1))

    # --- drawing --------------------------------------------------------------------------
    def _body_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def watch_cursor_row(self, row: int) -> None:
        """Keep the cursor row in view."""
        top = round(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + self._body_height():
            self.scroll_to(y=row - self._body_height() + 1, animate=False, immediate=True)
        self.refresh()

    def notify_style_update(self) -> None:
        self._styles = None  # focus, theme or CSS changed
        super().notify_style_update()

    def _line_styles(self) -> tuple[Style, Style, Style, Style]:
        """Base, header, cursor and even-row styles (looked up once per style change:
        per line they cost more than the line)."""
        if self._styles is None:
            base = self.rich_style
            self._styles = (
                base,
                self.get_component_rich_style("row-table--header"),
                base + self.get_component_rich_style("row-table--cursor"),
                base + self.get_component_rich_style("row-table--even"),
            )
        return self._styles

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base, header, cursor, even = self._line_styles()
        if y == 0:
            text, style = self._header, header
        else:
            index = round(self.scroll_y) + y - 1
            if index >= len(self._lines):
                return Strip.blank(width, base)
            text, style = self._lines[index], base
            if index == self.cursor_row:
                style = cursor
            elif index % 2 == 0:  # DataTable's zebra: the first row is an even one
                style = even
        left = round(self.scroll_x)
        strip = Strip([Segment(text, style)]).crop(left, left + width)
        return strip.extend_cell_length(width, _background(style))

    # --- keys and mouse ---------------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step)

    def action_page(self, step: int) -> None:
        self.move_cursor(self.cursor_row + step * self._body_height())

    def action_cursor_to(self, row: int) -> None:
        self.move_cursor(row if row >= 0 else len(self._lines) - 1)

    def action_select(self) -> None:
        if self._lines:
            self.post_message(self.RowSelected(self, self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        row = round(self.scroll_y) + event.y - 1
        if row >= len(self._lines):
            return
        if row == self.cursor_row:
            self.action_select()
        else:
            self.move_cursor(row)


def _background(style: Style) -> Style:
    """``style`` without its text attributes (to fill the rest of a line)."""
    return Style(bgcolor=style.bgcolor, color=style.color)
