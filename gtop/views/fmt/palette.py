"""Glyphs and colours for causes and lane states, shared by the attribution widgets.

Every state has a distinct glyph, so the widgets stay readable with ``--no-color``
(styles dropped); colours only reinforce the glyphs.
"""

from __future__ import annotations

from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.lanes import Code

CAUSE_GLYPH = {
    Cause.G_COMP: "█", Cause.G_XFER: "▓", Cause.H_CTRL: "c", Cause.H_APP: "a",
    Cause.H_WAIT_GPU: "w", Cause.H_IO: "i", Cause.OFF_CPU: "z", Cause.G_QUEUE: "q",
    Cause.G_STALL: "s", Cause.UNKNOWN: "?", Cause.G_COMM: "▒",
    Cause.NOT_TRACED: "░", Cause.GTOP: "g",
}  # fmt: skip
CAUSE_STYLE = {
    Cause.G_COMP: "green", Cause.G_XFER: "cyan", Cause.H_CTRL: "yellow",
    Cause.H_APP: "magenta", Cause.H_WAIT_GPU: "red", Cause.H_IO: "blue",
    Cause.OFF_CPU: "bright_black", Cause.G_QUEUE: "dark_orange", Cause.G_STALL: "orange4",
    Cause.UNKNOWN: "grey30", Cause.G_COMM: "bright_green",
    Cause.NOT_TRACED: "grey35", Cause.GTOP: "white",
}  # fmt: skip
LANE_GLYPH = {
    Code.KERNEL: "█", Code.COPY: "▓", Code.QUEUE: "q", Code.STALL: "s", Code.IDLE: "·",
    Code.ON_CPU: "▇", Code.IN_API: "c", Code.IN_SYNC: "w", Code.RUNNABLE: "r",
    Code.BLOCKED_IO: "i", Code.BLOCKED_LOCK: "l", Code.BLOCKED_SLEEP: "z",
    Code.BLOCKED_POLL: "p", Code.BLOCKED_GPU: "g", Code.BLOCKED_OTHER: "b",
    Code.UNKNOWN: "?", Code.NOT_TRACED: "░",
}  # fmt: skip
LANE_STYLE = {
    Code.KERNEL: "green", Code.COPY: "cyan", Code.QUEUE: "dark_orange",
    Code.STALL: "orange4", Code.IDLE: "grey30", Code.ON_CPU: "magenta",
    Code.IN_API: "yellow", Code.IN_SYNC: "red", Code.RUNNABLE: "bright_black",
    Code.BLOCKED_IO: "blue", Code.BLOCKED_LOCK: "bright_black",
    Code.BLOCKED_SLEEP: "bright_black", Code.BLOCKED_POLL: "bright_black",
    Code.BLOCKED_GPU: "red", Code.BLOCKED_OTHER: "bright_black", Code.UNKNOWN: "grey30",
    Code.NOT_TRACED: "grey35",
}  # fmt: skip


def style(name: str, color: bool) -> str:
    """``name`` when colours are on, else no style."""
    return name if color else ""
