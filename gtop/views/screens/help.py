"""The `?` screen: what the screen under it shows and how to read it, then every key
that works there (from BINDINGS), each listed once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from gtop.views.widgets.row_table import Column, RowTable


@dataclass(frozen=True)
class KeyHelp:
    """One key: how it is shown, what it does, whether it works right now."""

    key: str
    description: str
    enabled: bool


def keys_of(
    active_bindings: dict[str, ActiveBinding], display: Callable[[Binding], str]
) -> list[KeyHelp]:
    """A screen's ``active_bindings``, one entry per action, app-wide keys first
    (then the screen's, then the focused widget's).

    Keys bound to the same action and description are joined (``←/h``).
    """
    merged: dict[tuple[str, str], list[str]] = {}
    enabled: dict[tuple[str, str], bool] = {}
    by_node: dict[int, list[ActiveBinding]] = {}
    for active in active_bindings.values():
        by_node.setdefault(id(active.node), []).append(active)
    groups = sorted(by_node.values(), key=lambda g: len(g[0].node.ancestors_with_self))
    for active in (a for group in groups for a in group):
        binding = active.binding
        if not binding.description:
            continue
        ident = (binding.action, binding.description)
        merged.setdefault(ident, []).append(display(binding))
        enabled[ident] = enabled.get(ident, False) or active.enabled
    return [
        KeyHelp("/".join(keys), desc, enabled[(action, desc)])
        for (action, desc), keys in merged.items()
    ]


HEAD = ("key", "action")


class HelpScreen(ModalScreen[None]):
    """What the screen shows (``about``), then the keys in a table; "(n/a)" marks keys
    that do not apply here. The table takes focus, so arrows scroll it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 80; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen #about { height: auto; max-height: 10; margin-bottom: 1; }
    HelpScreen RowTable { height: auto; max-height: 18; }
    HelpScreen .hint { color: $text-muted; }
    """

    AUTO_FOCUS = "RowTable"

    BINDINGS = [
        Binding("escape", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
        Binding("l", "legend", "Legend", show=False),
    ]

    def __init__(self, keys: list[KeyHelp], about: str = "") -> None:
        super().__init__()
        self.keys = keys
        self.about = about

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "gtop help"
            if self.about:
                yield Static(self.about, id="about", markup=False)
            yield Static("keys (n/a: not available here) · l: legend · Esc closes", classes="hint")
            yield RowTable()

    def on_mount(self) -> None:
        rows = [
            (item.key, item.description if item.enabled else f"{item.description} (n/a)")
            for item in self.keys
        ]
        widths = [max([len(label), *(len(r[i]) for r in rows)]) for i, label in enumerate(HEAD)]
        columns = [Column(label, width) for label, width in zip(HEAD, widths, strict=True)]
        self.query_one(RowTable).set_table(columns, rows)

    async def action_legend(self) -> None:
        self.dismiss()
        await self.app.run_action("legend")
