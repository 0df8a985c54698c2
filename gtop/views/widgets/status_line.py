"""One line: live or replay, paused, recording state, drops, collector trouble, and what
gtop costs the traced processes."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class Status:
    """What the status line shows (built by the app from its source and model)."""

    live: bool
    title: str
    paused: bool = False
    recording: str | None = None
    """``"file.gtop 1,234 rows"`` while recording, else None."""
    drops: dict[str, int] = field(default_factory=dict)
    """Rows lost, by stream: always shown when non-zero."""
    trouble: tuple[str, ...] = ()
    """Collector errors and notes, e.g. ``"nvml: no NVIDIA driver found"``."""
    cost: str | None = None
    """What gtop costs the traced processes, as its agents measured it (last)."""


class StatusLine(Widget):
    """Drops come right after the mode so that they survive truncation at 80 columns."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; padding: 0 1; }
    StatusLine > .status-line--mode { text-style: bold; }
    StatusLine > .status-line--rec { color: $error; text-style: bold; }
    StatusLine > .status-line--warn { color: $warning; text-style: bold; }
    StatusLine > .status-line--muted { color: $text-muted; }
    """

    COMPONENT_CLASSES = {
        "status-line--mode",
        "status-line--rec",
        "status-line--warn",
        "status-line--muted",
    }

    status: reactive[Status | None] = reactive(None, layout=False)
    """The current status; the line is blank until the first one."""

    def render(self) -> Text:
        st = self.status
        if st is None:
            return Text()

        def style(name: str) -> object:
            return self.get_component_rich_style(f"status-line--{name}", partial=True)

        parts: list[Text] = [Text(("● LIVE " if st.live else "▶ ") + st.title, style=style("mode"))]
        if st.paused:
            parts.append(Text("⏸ PAUSED", style=style("warn")))
        if st.recording:
            parts.append(Text(f"⏺ REC {st.recording}", style=style("rec")))
        if st.drops:
            lost = ", ".join(drop_text(k, v) for k, v in sorted(st.drops.items()))
            parts.append(Text(f"⚠ drops: {lost}", style=style("warn")))
        parts.extend(Text(t, style=style("muted")) for t in st.trouble)
        sep = Text(" │ ")
        room = self.size.width - sep.join(parts).cell_len - sep.cell_len
        cost = fit_items(st.cost, room) if st.cost else ""
        if cost:
            parts.append(Text(cost, style=style("muted")))
        out = sep.join(parts)
        out.no_wrap = True
        out.overflow = "ellipsis"
        return out


HISTORY_CAP = " (history cap)"
"""How :meth:`gtop.core.model.Model.drops` names rows its memory bound let go."""


def drop_text(name: str, n: int) -> str:
    """One drop count in words a user reads at a glance: a probe's records past its
    buffer, rows the view's memory cap let go early (a recording keeps them), or the
    stream's count as it is."""
    stream = name.removesuffix(HISTORY_CAP)
    probe = stream.removeprefix("probe_") if stream.startswith("probe_") else None
    if name.endswith(HISTORY_CAP):
        what = f"{probe} probe records" if probe else f"{stream} rows"
        return f"{n:,} older {what} let go (the view's memory cap; gtop record keeps all)"
    if probe:
        return f"{n:,} {probe} probe records past its buffer"
    return f"{name} {n:,}"


def fit_items(line: str, room: int) -> str:
    """``line``'s comma-separated items that fit ``room`` columns whole, then ``…`` (at
    80 columns the cost was cut to ``agent CPU`` without its number); empty when not
    even the first one fits."""
    items = line.split(", ")
    for n in range(len(items), 0, -1):
        text = ", ".join(items[:n]) + ("" if n == len(items) else ", …")
        if len(text) <= room:
            return text
    return ""
