"""A base for timeline widgets: time zoom and pan, and row scrolling, bound to keys."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget


class ZoomPan(Widget, can_focus=True):
    """Keys: ``z``/``x`` zoom time, shift+``←``/``→`` pan, ``↑``/``↓``/PgUp/PgDn scroll
    rows, ``0`` resets (plain arrows, ``+``/``-`` and Home/End are the replay's).
    Subclasses say how many rows they have (:meth:`row_count`) and whether they have
    data (:meth:`has_data`). Lines are cut at the widget's edge, never wrapped:
    a wrapped line would push the rows below it out of view."""

    DEFAULT_CSS = """
    ZoomPan {
        height: 1fr;
        min-height: 8;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: clip;
    }
    """

    BINDINGS = [
        Binding("z", "zoom(2)", "Zoom in"),
        Binding("x", "zoom(0.5)", "Zoom out"),
        Binding("shift+left", "pan(-1)", "Earlier", show=False),
        Binding("shift+right", "pan(1)", "Later", show=False),
        Binding("up", "scroll_rows(-1)", "Row up", show=False),
        Binding("down", "scroll_rows(1)", "Row down", show=False),
        Binding("pageup", "scroll_rows(-10)", "Page up", show=False),
        Binding("pagedown", "scroll_rows(10)", "Page down", show=False),
        Binding("0", "reset", "Reset view"),
    ]

    zoom: reactive[float] = reactive(1.0)
    """Time magnification: 1 shows everything."""
    pan: reactive[float] = reactive(0.0)
    """Left edge of the visible time window, as a fraction of the full time range."""
    top: reactive[int] = reactive(0)
    """Index of the first row shown."""

    probe_view: ClassVar[str] = ""
    """The view id a probe's catalog entry names to be drawn by this widget
    (:mod:`~gtop.views.widgets.probe_views` finds it); empty: none."""
    aligns: ClassVar[bool] = False
    """Whether the view has a second time alignment (``action_toggle_align``)."""

    def show_result(self, result: object) -> None:
        """Draw a probe's analysis result (see ``probe_views.PROBE_VIEWS``)."""
        raise NotImplementedError

    def action_toggle_align(self) -> None:
        """Switch time alignment (views with :attr:`aligns`)."""

    def has_data(self) -> bool:
        raise NotImplementedError

    def row_count(self) -> int:
        raise NotImplementedError

    def window(self, full: float) -> tuple[float, float]:
        """The visible part of ``[0, full)``."""
        lo = self.pan * full
        return lo, lo + full / self.zoom

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Grey out everything without data, and zooming out past the full range."""
        if not self.has_data():
            return None
        if action == "zoom" and float(str(parameters[0])) < 1 and self.zoom <= 1:
            return None
        return True

    def action_zoom(self, factor: float) -> None:
        center = self.pan + 0.5 / self.zoom
        self.zoom = min(max(self.zoom * factor, 1.0), 1024.0)
        self.pan = float(np.clip(center - 0.5 / self.zoom, 0.0, 1.0 - 1.0 / self.zoom))

    def action_pan(self, step: int) -> None:
        self.pan = float(np.clip(self.pan + step * 0.25 / self.zoom, 0.0, 1.0 - 1.0 / self.zoom))

    def action_scroll_rows(self, rows: int) -> None:
        self.top = int(np.clip(self.top + rows, 0, max(self.row_count() - 1, 0)))

    def action_reset(self) -> None:
        self.zoom, self.pan, self.top = 1.0, 0.0, 0
