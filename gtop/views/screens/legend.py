"""The ``l`` screen: what every cause and timeline glyph means, one sentence each."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from gtop.analysis.attribution.causes import EXPLANATIONS, LABELS, PHRASES, Cause
from gtop.analysis.attribution.lanes import CODE_NAMES, Code
from gtop.views.fmt.busy import BARS
from gtop.views.fmt.palette import CAUSE_GLYPH, CAUSE_STYLE, LANE_GLYPH, LANE_STYLE
from gtop.views.screens.text_box import TextBoxScreen
from gtop.views.widgets.sm_schedule import SCHED

TIMELINES = (
    f"Timelines (Streams, Swimlanes, the GPU-time ribbon): a cell's height {BARS} is the "
    "share of that slice of time that was busy (a stream running work, the GPU running "
    "this process's work, a thread on a CPU); its colour is what held the slice longest. "
    "A cell with nothing busy shows a letter instead, saying why; a blank cell has no data."
)

BLOCK_SCHEDULE = (
    "one row per SM (or group of SMs); a cell's height is how many blocks ran on it then, "
    "its colour their wave. Kernel wall time: from the kernel's first block starting to "
    "its last ending. Block time: every block's duration added up; blocks run side by "
    "side, so it is far longer than the wall time. busy: the share of the wall time the "
    f"SM ran a block. {SCHED}. Tail: the end of the kernel, when some SMs had no block "
    "left to run (a long tail wastes the GPU)."
)


def legend_text() -> Text:
    """The legend: timelines, then each cause, then the thread and stream lane states."""
    out = Text(TIMELINES + "\n\n")
    out.append("Where GPU time goes (GPU time tab, report):\n", style="bold")
    for cause in Cause:
        out.append(f" {CAUSE_GLYPH[cause]} ", style=f"bold {CAUSE_STYLE[cause]}")
        out.append(f"{PHRASES[cause]}", style="bold")
        out.append(f" ({LABELS[cause]}): {EXPLANATIONS[cause]}\n")
    out.append("\nSwimlanes letters:\n", style="bold")
    for code in Code:
        out.append(f" {LANE_GLYPH[code]}", style=f"bold {LANE_STYLE[code]}")
        out.append(f" {CODE_NAMES[code]} ")
    out.append(
        "\n\nGAR (GPU Active Ratio) = the share of the window the GPU ran this process's "
        "kernels or copies."
    )
    out.append("\n\nProbes, block schedule:\n", style="bold")
    out.append(BLOCK_SCHEDULE)
    return out


class LegendScreen(TextBoxScreen):
    """The legend in a scrollable box; Esc, l or q closes it."""

    BINDINGS = [
        Binding("escape,l,q", "dismiss", "Close", show=False),
    ]

    def __init__(self) -> None:
        super().__init__(legend_text(), "legend · Esc closes · ↑↓ scroll")
