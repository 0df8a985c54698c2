"""Process-screen tab "Kernels": the focused process's kernels, and its CUDA API calls.

Kernel totals cover the window of :func:`~gtop.views.tabs.session_data.tab_window` (the
verdict line's: in a replay at the report's window, the kernels the report's top kernels
count), summed on a worker thread and named in the line above the table, which also says
how much of it kernel sampling traced (counts are of the traced kernels, rates per traced
second); the API table sums the calls of the last :data:`API_WINDOW_S` seconds.
``a`` switches between the two; Enter on a kernel shows its full demangled name (and why
it cannot be probed, for kernels without PTX); ``b``/``t``/``m`` toggle the
block_sched/tensorop/mem_trace probe for the selected kernel in a live process with the
agent (greyed in replay), sampled: 1 launch in N, N chosen by the agent to keep the
probe's cost within 5% of the target's time; ``B``/``T``/``M`` probe every launch.
``g`` switches how the live agent traces CUDA graphs: one record per launch (the
default, a row named ``CUDA graph N``) or every node of every launch; a line above the
table says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Static

from gtop.agent.modes import graph_level, toggle_graph_nodes
from gtop.analysis import intervals as iv
from gtop.analysis.attribution import untraced
from gtop.analysis.kernels import probes
from gtop.analysis.kernels.cuda_activity import (
    ApiRow,
    KernelRow,
    KernelStats,
    api_summary,
    names_from_entities,
)
from gtop.core import layouts
from gtop.core.model import Model, Slice
from gtop.core.source import Controls, HasControls
from gtop.cupti.decode import GRAPH_NAME
from gtop.probes.catalog import ENTRIES
from gtop.probes.engine.instrumentable import refusal
from gtop.views.tabs import absence
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import TabWindow, session_of, tab_window
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.api_table import ApiTable
from gtop.views.widgets.kernel_table import KernelTable
from gtop.views.widgets.row_table import RowTable

API_WINDOW_S = 10.0
"""The API table covers this many recent seconds (calls/s and % wall are over it)."""


@dataclass(frozen=True)
class _Snap:
    api: Slice | None
    span_ns: int


@dataclass(frozen=True)
class _KernelSnap:
    kernels: Slice | None
    untraced: Slice | None
    window: TabWindow
    names: dict[int, str]


@dataclass(frozen=True)
class _Kernels:
    rows: list[KernelRow]
    traced_ns: int
    """ns of the kernels' span in the window that were traced (launches/s are over it)."""
    span_ns: int
    label: str


def window_kernels(snap: _KernelSnap, pid: int) -> _Kernels:
    """Worker: ``pid``'s kernels that start in the window, summed, and how much of
    their span in it kernel sampling traced."""
    w = snap.window
    rows = layouts.KERNEL.empty(0) if snap.kernels is None else snap.kernels.rows()
    rows = rows[(rows["pid"] == pid) & (rows["t_ns"] >= w.t0) & (rows["t_ns"] < w.t1)]
    stats = KernelStats()
    stats.add(rows)
    if not len(rows):
        return _Kernels([], 0, 0, w.label())
    lo, hi = int(rows["t_ns"].min()), min(w.t1, int(rows["end_ns"].max()))
    off = 0
    if snap.untraced is not None:
        spans = untraced.spans_by_pid(untraced.from_stream(snap.untraced.rows()), w.t1)
        if pid in spans:
            off = iv.clip(spans[pid], lo, hi).measure()
    return _Kernels(stats.rows(snap.names), max(0, hi - lo - off), hi - lo, w.label())


def _refusal(name: str) -> str | None:
    """Why kernel ``name``'s row cannot be probed (a CUDA graph's row is a whole graph
    launch, not a kernel), or None."""
    if name.startswith(GRAPH_NAME):
        return (
            "a CUDA graph launch, one row for the whole graph: its kernels are not probed "
            "one by one (g, live: trace every node)"
        )
    return refusal(name)


class KernelsTab(WorkerPanel):
    """Kernel table (sortable, filterable, Enter: full name) or API table (``a``)."""

    DEFAULT_CSS = """
    KernelsTab > #kernel-detail { height: auto; max-height: 4; padding: 0 1; }
    KernelsTab > #graph-mode { height: auto; color: $text-muted; padding: 0 1; }
    """

    BINDINGS = [
        Binding("a", "toggle_api", "Kernels/API"),
        Binding("escape", "close_detail", "Close", show=False),
        Binding("g", "toggle_graph_nodes", "Graphs: launch/nodes"),
        *(Binding(e.toggle_key, f"probe('{e.name}')", e.name) for e in ENTRIES.values()),
        *(
            Binding(
                e.toggle_key.upper(), f"probe('{e.name}', 1)", f"{e.name} every launch", show=False
            )
            for e in ENTRIES.values()
        ),
    ]

    show_api: reactive[bool] = reactive(False)
    """Show the API table instead of the kernel table."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.kernels = KernelTable()
        self.detail = Static("", id="kernel-detail")
        self.graph_mode = Static("", id="graph-mode")
        """How kernels are traced: sampling (a duty cycle), graph launches or nodes."""
        self.api = ApiTable()
        self._detail_text = ""
        self._wanted: str | None = None
        """A kernel to select once the table has it (the palette's kernel commands)."""
        self._graph_text = ""
        self._window_line = ""
        """The window the table covers, and how much of it was traced."""
        self._lines: list[str] = []

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.graph_mode
        yield self.kernels
        yield self.detail
        yield self.api

    def on_mount(self) -> None:
        self._layout()

    def set_empty(self, empty: bool) -> None:
        super().set_empty(empty)
        self._layout()

    def _layout(self) -> None:
        shown = not self._empty
        self.detail.display = shown and bool(self._detail_text) and not self.show_api
        self.api.display = shown and self.show_api
        self.kernels.display = shown and not self.show_api
        self.graph_mode.display = shown and not self.show_api and bool(self._graph_text)

    def reason(self, model: Model) -> str | None:
        if self.show_api:
            return absence.api_reason(model, self.pid, self.agent_error(), self.live())
        data = session_of(model)
        if data.kernels.get(self.pid) is None:
            return absence.cuda_reason(model, self.pid, self.agent_error(), self.live()) or (
                "no kernels yet: the process ran only copies or memsets"
            )
        return None

    def _agent_kinds(self, model: Model) -> tuple[str, ...] | None:
        """What this process's live agent traces, when it traces kernels."""
        entity = model.entities.get("agent", {}).get(str(self.pid))
        kinds = tuple(entity.value.get("kinds", ())) if entity is not None else ()
        return kinds if "kernel" in kinds and self._controls() is not None else None

    def show(self, model: Model) -> None:
        kinds = self._agent_kinds(model)
        lines = []
        if kinds is not None:
            lines.append(
                "CUDA graphs: one row per launch (g: trace every node)"
                if graph_level(kinds)
                else "CUDA graphs: every node traced (g: one row per launch, cheaper)"
            )
        self._lines = [line for line in lines if line]
        self._show_lines()
        super().show(model)

    def _show_lines(self) -> None:
        text = "\n".join([self._window_line, *self._lines] if self._window_line else self._lines)
        if text != self._graph_text:
            self._graph_text = text
            self.graph_mode.update(text)
            self._layout()

    def snapshot(self, model: Model) -> _Snap | _KernelSnap:
        if self.show_api:
            return _Snap(model.slice(layouts.API.name, API_WINDOW_S), int(API_WINDOW_S * 1e9))
        window = tab_window(model, self.app.source, self.pid)
        seconds = (model.now_ns - window.t0) / 1e9
        return _KernelSnap(
            model.slice(layouts.KERNEL.name, seconds),
            model.slice(layouts.UNTRACED.name, seconds + 60),  # (an off phase starts before)
            window,
            names_from_entities(model.entities.get("kernel_name", {}).values()),
        )

    def compute(self, snap: _Snap | _KernelSnap) -> list[ApiRow] | _Kernels:
        if isinstance(snap, _KernelSnap):
            return window_kernels(snap, self.pid)
        rows = layouts.API.empty(0) if snap.api is None else snap.api.rows()
        return api_summary(rows[rows["pid"] == self.pid], snap.span_ns)

    def apply(self, result: list[ApiRow] | _Kernels) -> None:
        if not isinstance(result, _Kernels):
            self.api.set_rows(result)
            return
        self.kernels.set_rows(result.rows, result.traced_ns, self._known())
        traced = result.traced_ns / result.span_ns if result.span_ns else 1.0
        sampled = (
            f"; sampled: {traced:.0%} of it traced, counts of the traced kernels, rates "
            "per traced second"
            if traced < 0.995
            else ""
        )
        self._window_line = f"Kernels over {result.label}{sampled}"
        self._show_lines()
        self._select_wanted()

    def _known(self) -> list[str]:
        """Every kernel name seen (labels tell namesakes apart among them)."""
        model = self._model
        if model is None:
            return []
        return list(names_from_entities(model.entities.get("kernel_name", {}).values()).values())

    def on_kernel_table_selected(self, message: KernelTable.Selected) -> None:
        self.show_full_name(message.row)

    def select_kernel(self, name: str) -> None:
        """Show the kernel table with the cursor on ``name``, and its full name (now, or
        once the table has the kernel: the tab may have just been opened)."""
        self.show_api = False
        self._wanted = name
        if self.is_mounted:  # (else its first result selects it: the tab opens now)
            self._select_wanted()

    def _select_wanted(self) -> None:
        if self._wanted is None:
            return
        row = self.kernels.select(self._wanted)
        if row is not None:
            self._wanted = None
            self._detail_text = ""
            self.show_full_name(row)

    def show_full_name(self, row: KernelRow) -> None:
        """Show ``row``'s full demangled name under the table (Enter again hides it, and
        so does Esc), and, for a kernel that cannot be probed, why."""
        why = _refusal(row.name)
        text = row.demangled + (f"\n{why}" if why else "")
        self._detail_text = "" if self._detail_text == text else text
        self.detail.update(self._detail_text)
        self._layout()

    def action_close_detail(self) -> None:
        """Esc: close the full name first; with none open, Esc leaves the screen."""
        if not self._detail_text or self.show_api:
            raise SkipAction()
        self._detail_text = ""
        self.detail.update("")
        self._layout()

    def watch_show_api(self, show_api: bool) -> None:
        self._layout()
        self.recompute()  # (each table is summed on the worker, marked until drawn)

    def action_toggle_api(self) -> None:
        self.show_api = not self.show_api
        target = self.api if self.show_api else self.kernels
        self.call_after_refresh(target.query_one(RowTable).focus)

    # --- probes (live, through the agent) ----------------------------------------------

    def _controls(self) -> Controls | None:
        """The live session's controls, when they can reach an agent."""
        app = self.app
        controls = app.controls if isinstance(app, HasControls) else None
        return controls if controls is not None and controls.can_probe() else None

    def _selected(self) -> KernelRow | None:
        shown = self.kernels.shown
        row = self.kernels.query_one(RowTable).cursor_row
        return shown[row] if 0 <= row < len(shown) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("probe", "toggle_graph_nodes") and (
            self._controls() is None or self.show_api
        ):
            return None  # greyed: these need a live process with the agent
        return True

    def why_disabled(self, action: str) -> str | None:
        """Why a greyed key does nothing here (the footer says it)."""
        if action not in ("probe", "toggle_graph_nodes"):
            return None
        if self.show_api:
            return "kernel table only"
        return "live only" if not self.live() else "no agent"

    def action_toggle_graph_nodes(self) -> None:
        """Trace CUDA graphs per node instead of per launch, or back (from now on)."""
        controls = self._controls()
        kinds = self._agent_kinds(self._model) if self._model is not None else None
        if controls is None or kinds is None:
            self.notify("no agent tracing kernels in this process", severity="warning")
            return
        self._send_kinds(controls, toggle_graph_nodes(kinds))

    @work(thread=True, group="agent-control")
    def _send_kinds(self, controls: Controls, kinds: tuple[str, ...]) -> None:
        why = controls.set_kinds(self.pid, list(kinds))
        mode = "one row per launch" if graph_level(kinds) else "every node"
        message = why or f"CUDA graphs: {mode} from now on"
        self.app.call_from_thread(
            self.notify, message, severity="warning" if why else "information"
        )

    def action_probe(self, probe: str, every: int = 0) -> None:
        """Toggle ``probe`` for the selected kernel (its next launches get instrumented):
        sampled within the cost budget (``every`` 0), or turned on for 1 launch in
        ``every`` (1: every launch; replaces a sampled one)."""
        row, controls = self._selected(), self._controls()
        if row is None or controls is None or self._model is None:
            return
        why = _refusal(row.name)
        if why:
            self.notify(f"{row.short}: {why}", severity="warning")
            return
        on = bool(every) or not probes.is_on(self._model, self.pid, row.name, probe)
        self._send_probe(controls, row, probe, every, on)

    @work(thread=True, group="probe-control")
    def _send_probe(
        self, controls: Controls, row: KernelRow, probe: str, every: int, on: bool
    ) -> None:
        why = controls.set_probe(self.pid, row.name, probe, every, on)
        state = ("on for every launch" if every == 1 else "on") if on else "off"
        message = why or f"{probe} {state} for {row.short} (from its next launch)"
        self.app.call_from_thread(
            self.notify, message, severity="warning" if why else "information"
        )


PANEL = PanelSpec(
    "Kernels",
    KernelsTab,
    order=30,
    about=(
        "Every kernel the process ran in the window the line above names, one row per"
        " kernel: its share of the process's GPU time, launches per second, total and mean "
        "time, launch geometry. Enter shows the full name; a switches to the CUDA API calls."
        " A CUDA graph launch is one row, CUDA graph N, unless g (live) traces every node."
    ),
)
