"""One process: identity, its resource history, the verdict line (why its GPU is idle),
and the registered panels as tabs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Input, TabbedContent, TabPane
from textual.widgets._tabbed_content import ContentTabs

from gtop.core.model import Model
from gtop.views.screens.base import GtopScreen
from gtop.views.screens.verdict import VerdictScreen, once_lines
from gtop.views.tabs.panels import ModelView, PanelSpec, process_panels
from gtop.views.tabs.verdict_line import VerdictLine
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.process_summary import ProcessSummary

TALL = 40
"""From this many rows up the process summary always shows its history."""
SUMMARY_TABS = frozenset({"GPUs", "Children"})


class ProcessTabs(TabbedContent):
    """Tabs that only ``[``/``]``, a click or the palette switch: Textual's TabbedContent
    also opens the pane of any widget that gets focus, so a focus arriving late (the
    screen's auto-focus while a slow first frame draws, a deferred focus) switched back
    to the tab just left, and the key that had switched it looked lost."""

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        event.prevent_default()  # Textual would run TabbedContent's handler too
        event.stop()


class ProcessScreen(GtopScreen):
    """Focus on ``pid``; Esc or Backspace goes back."""

    DEFAULT_CSS = """
    ProcessScreen TabbedContent { height: 1fr; }
    ProcessScreen TabPane { padding: 0; }
    """

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("v", "verdict", "Why idle"),
        Binding("backspace", "back", "Back", show=False),
        Binding("left_square_bracket", "tab(-1)", "Prev tab", show=False),
        Binding("right_square_bracket", "tab(1)", "Next tab", show=False),
    ]

    def __init__(self, model: Model, pid: int, *, replay: bool) -> None:
        super().__init__(model, replay=replay)
        self.pid = pid
        self._panels: dict[str, ModelView] = {}
        self._specs: dict[str, PanelSpec] = {}
        self._shown: dict[str, bool] = {}
        """Tabs with a ``when``: whether each is shown now."""
        self.summary = ProcessSummary(pid)
        self.verdict = VerdictLine(pid)
        self.tabs = ProcessTabs()

    def compose_body(self) -> ComposeResult:
        yield self.summary
        yield self.verdict
        with self.tabs:
            for i, spec in enumerate(process_panels()):
                panel = spec.factory(self.pid)
                self._panels[f"panel-{i}"] = panel
                self._specs[f"panel-{i}"] = spec
                with TabPane(spec.title, id=f"panel-{i}"):
                    if i == 0:  # the others are mounted when first opened (Enter's frame
                        yield panel  # mounted all eight tabs' widgets: 0.5-1.4 s)

    def show(self, model: Model) -> None:
        self.summary.show(model)
        self.verdict.show(model)
        self._show_tabs(model)
        panel = self._panels.get(self.tabs.active)
        if panel is not None and _mounted(panel):
            panel.show(model)
            if self.focused is None:  # its table may have appeared with its first data
                self.call_after_refresh(self._focus_in, panel)

    def _show_tabs(self, model: Model) -> None:
        """Show or hide the tabs that are shown only while something holds."""
        for pane, spec in self._specs.items():
            if spec.when is None:
                continue
            wanted = spec.when(model, self.pid)
            if wanted != self._shown.get(pane, True):
                (self.tabs.show_tab if wanted else self.tabs.hide_tab)(pane)
                self._shown[pane] = wanted

    def action_verdict(self) -> None:
        """The verdict line in full: evidence and the usual fix (cut at 80 columns)."""
        line = self.verdict
        once = once_lines(self.app.source) if line.verdict is not None else []
        screen = VerdictScreen(line.verdict, line.line(), line.gains, once)
        self.app.push_screen(screen)
        if screen.pending:  # (the gains of the verdict it shows, even if a newer comes)
            line.want_gains(screen.show_gains)

    def about(self) -> str:
        spec = self._specs.get(self.tabs.active)
        head = (
            f"Process {self.pid}: identity and resource history on top, one line on why its "
            "GPU is idle (the verdict; v shows it in full), then tabs ([ and ] switch)."
        )
        return f"{head}\n\n{spec.title}: {spec.about}" if spec and spec.about else head

    def panel(self) -> ModelView | None:
        """The open tab's panel."""
        return self._panels.get(self.tabs.active)

    def ready(self) -> bool:
        if not self.tabs.active:  # the tabs are not mounted yet
            return False
        panel = self._panels.get(self.tabs.active)
        tab_ready = not isinstance(panel, WorkerPanel) or panel.settled()
        return tab_ready and self.verdict.settled()

    def on_resize(self) -> None:
        self._fit_summary()

    def _fit_summary(self) -> None:
        """On a short terminal the analysis tabs need the rows: the summary keeps its two
        identity lines there (its history shows on the GPUs and Children tabs)."""
        spec = self._specs.get(self.tabs.active)
        full = self.size.height >= TALL or spec is None or spec.title in SUMMARY_TABS
        self.summary.styles.height = 5 if full else 2

    async def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._fit_summary()
        panel = self._panels.get(event.pane.id or "")
        if isinstance(panel, Widget) and panel.parent is None:  # opened for the first time
            await event.pane.mount(panel)
        if panel is not None:
            panel.show(self.model)
            self.call_after_refresh(self._focus_in, panel)

    def _focus_in(self, panel: ModelView) -> None:
        """Keys go to the open tab: focus its first focusable widget that is on display
        and is not a text box (a filter box is opened with ``/``; focused, it would take
        the screen's keys as text), else nothing: the screen's keys still work, and a
        widget left focused in the previous tab would make TabbedContent switch back."""
        if not isinstance(panel, Widget) or self._panels.get(self.tabs.active) is not panel:
            return  # another tab opened since: focusing here would switch back to this one
        for widget in (panel, *panel.query("*")):
            if widget.focusable and not isinstance(widget, Input) and _displayed(widget, panel):
                widget.focus()
                return
        self.set_focus(None)

    def open_tab(self, title: str) -> Widget | None:
        """Open the tab ``title``; its panel, or None when there is no such tab."""
        for pane, spec in self._specs.items():
            if spec.title == title:
                self.tabs.active = pane
                panel = self._panels[pane]
                return panel if isinstance(panel, Widget) else None
        return None

    def tab_titles(self) -> list[tuple[str, str]]:
        """Each tab's title and the first sentence of its ``about``."""
        return [(s.title, s.about.split(". ")[0]) for s in self._specs.values()]

    def action_back(self) -> None:
        self.dismiss()

    def action_tab(self, step: int) -> None:
        """Open the next (``step`` = 1) or previous (-1) tab. Through the tab bar, whose
        own state moves at once: TabbedContent follows it by messages, which a busy
        frame delays, so a second key read its stale ``active`` and one key was lost."""
        bars = [child for child in self.tabs.children if isinstance(child, ContentTabs)]
        if not bars:  # the screen has just opened: the bar is not mounted yet
            self.call_after_refresh(self.action_tab, step)
            return
        bar = bars[0]
        if step > 0:
            bar.action_next_tab()
        else:
            bar.action_previous_tab()


def _mounted(panel: ModelView) -> bool:
    """``panel`` is mounted (a tab's panel is, from the first time the tab opens)."""
    return not isinstance(panel, Widget) or panel.is_mounted


def _displayed(widget: Widget, top: Widget) -> bool:
    """``widget`` and its ancestors up to ``top`` are all displayed (a hidden parent
    leaves its children focusable in Textual's sense)."""
    node: object = widget
    while isinstance(node, Widget):
        if not node.display:
            return False
        if node is top:
            return True
        node = node.parent
    return True
