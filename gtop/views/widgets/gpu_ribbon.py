"""The on/off-GPU ribbon: one cell per time slice, newest on the right, coloured and
lettered by the cause that held the slice (see :mod:`gtop.views.fmt.palette`)."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from gtop.analysis.causes import LABELS, Cause
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE, NO_DATA_GLYPH, style


class GpuRibbon(Widget, can_focus=True):
    """A ribbon of the last N slices of one unit, with a time axis and a legend."""

    DEFAULT_CSS = """
    GpuRibbon {
        height: auto;
        min-height: 2;
    }
    """
    BINDINGS = [Binding("l", "toggle_legend", "Legend")]

    states: reactive[tuple[int, ...]] = reactive(tuple)
    """Cause per slice, oldest first (:func:`gtop.analysis.slices.dominant`); -1: no data."""
    slice_ms: reactive[float] = reactive(100.0)
    """Length of one slice, for the axis."""
    exact: reactive[bool] = reactive(True)
    """False when the states come from the NVML-only approximation: labelled as such."""
    color: reactive[bool] = reactive(True)
    """Colours on; off for ``--no-color`` (glyphs alone tell the causes apart)."""
    show_legend: reactive[bool] = reactive(True, layout=True)
    """Whether the legend lines are drawn."""

    def render(self) -> Text:
        width = max(1, self.size.width)
        shown = self.states[-width:]
        ribbon = Text(NO_DATA_GLYPH * (width - len(shown)))
        for cause in shown:
            if cause < 0:
                ribbon.append(NO_DATA_GLYPH)
            else:
                ribbon.append(
                    CAUSE_GLYPH[Cause(cause)], style(CAUSE_STYLE[Cause(cause)], self.color)
                )
        span_s = width * self.slice_ms / 1000
        left = f"-{span_s:g} s"
        tag = "" if self.exact else " APPROXIMATE (no CUPTI)"
        right = f"now{tag}"
        axis = Text(left + " " * max(1, width - len(left) - len(right)) + right)
        out = Text("\n").join([ribbon, axis])
        if self.show_legend:
            legend = Text()
            for cause in Cause:
                legend.append(CAUSE_GLYPH[cause], style(CAUSE_STYLE[cause], self.color))
                legend.append(f" {LABELS[cause]}  ")
            out.append("\n")
            out.append_text(legend)
        return out

    def action_toggle_legend(self) -> None:
        self.show_legend = not self.show_legend
