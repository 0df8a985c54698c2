"""The footer: the keys that work here, as one line of text.

Textual's Footer builds a widget per key and recomposes on every focus change; on the
2-core VM that was most of a tab switch (0.85 s of 2.3 s profiled on train_loop_cupti).
This draws the same hints as one Text, redrawn when the screen's bindings change.
"""

from __future__ import annotations

from rich.text import Text
from textual.screen import Screen
from textual.widget import Widget


class KeyHints(Widget):
    """``key Description`` for each shown binding of the focused chain, then the
    command palette's key at the right edge."""

    DEFAULT_CSS = """
    KeyHints { dock: bottom; height: 1; background: $panel; color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _changed(self, screen: Screen) -> None:
        if screen is self.screen:
            self.refresh()

    def hints(self) -> list[tuple[str, str, bool]]:
        """``(key, description, enabled)`` per action, in the footer's order; a greyed
        key says why instead of what it does, when its widget's ``why_disabled(action)``
        does (``g/b/t/m live only`` in a replay)."""
        seen: set[str] = set()
        out: list[tuple[str, str, bool]] = []
        because: dict[str, int] = {}
        """A reason -> its entry: greyed keys with one reason share it (``g/b/t/m live
        only``), shown first, so that the reason fits in 80 columns."""
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            key = self.app.get_key_display(binding)
            why = getattr(active.node, "why_disabled", None)
            reason = why(binding.action.split("(")[0]) if not active.enabled and why else None
            if reason and reason in because:
                at = because[reason]
                out[at] = (f"{out[at][0]}/{key}", reason, False)
            elif reason:
                because[reason] = len(out)
                out.append((key, reason, False))
            else:
                out.append((key, binding.description, active.enabled))
        first = sorted(because.values())  # the reasons first: a long line is cut at its end
        return [out[i] for i in first] + [e for i, e in enumerate(out) if i not in first]

    def render(self) -> Text:
        line = Text(no_wrap=True, overflow="crop")
        for key, description, enabled in self.hints():
            if not description:
                continue
            line.append(f" {key}", style="bold" if enabled else "dim")
            line.append(f" {description} ", style="" if enabled else "dim")
        palette = Text(" ^p palette ", style="bold")
        room = self.size.width - palette.cell_len
        if line.cell_len > room:
            line.truncate(max(0, room - 1))
            line.append("…")
        line.pad_right(max(0, room - line.cell_len))
        return line + palette
