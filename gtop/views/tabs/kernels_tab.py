"""Process-screen tab "Kernels": the focused process's kernels, and its CUDA API calls.

Kernel totals come from :class:`~gtop.views.tabs.session_data.SessionData`, aggregated batch
by batch as they arrive (since the session began, or since the last replay seek); the
API table sums the calls of the last :data:`API_WINDOW_S` seconds on a worker thread.
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
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Static

from gtop.agent.modes import graph_level, toggle_graph_nodes
from gtop.analysis import probes
from gtop.analysis.cuda_activity import ApiRow, KernelRow, api_summary, names_from_entities
from gtop.core import layouts
from gtop.core.model import Model, Slice
from gtop.core.source import Controls, HasControls
from gtop.probes.catalog import ENTRIES
from gtop.probes.engine.instrumentable import refusal
from gtop.views.tabs import absence
from gtop.views.tabs.panels import register_process_panel
from gtop.views.tabs.session_data import session_of
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


class KernelsTab(WorkerPanel):
    """Kernel table (sortable, filterable, Enter: full name) or API table (``a``)."""

    DEFAULT_CSS = """
    KernelsTab > #kernel-detail { height: auto; max-height: 4; padding: 0 1; }
    KernelsTab > #graph-mode { height: auto; color: $text-muted; padding: 0 1; }
    """

    BINDINGS = [
        Binding("a", "toggle_api", "Kernels/API"),
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
        self._drawn: tuple[int, int, int] | None = None
        self._detail_text = ""
        self._wanted: str | None = None
        """A kernel to select once the table has it (the palette's kernel commands)."""
        self._graph_text = ""

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

    def _sampling(self, model: Model) -> str:
        """A line while the agent traces this process's kernels in a duty cycle."""
        entity = model.entities.get("agent", {}).get(str(self.pid))
        sampling = entity.value.get("sampling") if entity is not None else None
        if not sampling:
            return ""
        return (
            f"Sampled: kernels traced {sampling['duty']:.0%} of the time "
            f"({sampling['rate'] / 1e3:.0f}k/s); rates per traced second"
        )

    def show(self, model: Model) -> None:
        kinds = self._agent_kinds(model)
        lines = [self._sampling(model)]
        if kinds is not None:
            lines.append(
                "CUDA graphs: one row per launch (g: trace every node)"
                if graph_level(kinds)
                else "CUDA graphs: every node traced (g: one row per launch, cheaper)"
            )
        text = "\n".join(line for line in lines if line)
        if text != self._graph_text:
            self._graph_text = text
            self.graph_mode.update(text)
            self._layout()
        data = session_of(model)
        stats = data.kernels.get(self.pid)
        if stats is not None:
            key = (data.generation, data.batches, id(stats))
            if key != self._drawn:
                self._drawn = key
                names = names_from_entities(model.entities.get("kernel_name", {}).values())
                self.kernels.set_rows(
                    stats.rows(names), data.traced_span_ns(self.pid), names.values()
                )
                self._select_wanted()
        super().show(model)

    def snapshot(self, model: Model) -> _Snap | None:
        if not self.show_api:
            return None
        return _Snap(model.slice(layouts.API.name, API_WINDOW_S), int(API_WINDOW_S * 1e9))

    def compute(self, snap: _Snap | None) -> list[ApiRow] | None:
        if snap is None:
            return None
        rows = layouts.API.empty(0) if snap.api is None else snap.api.rows()
        return api_summary(rows[rows["pid"] == self.pid], snap.span_ns)

    def apply(self, result: list[ApiRow] | None) -> None:
        if result is not None:
            self.api.set_rows(result)

    def on_kernel_table_selected(self, message: KernelTable.Selected) -> None:
        self.show_full_name(message.row)

    def select_kernel(self, name: str) -> None:
        """Show the kernel table with the cursor on ``name``, and its full name (now, or
        once the table has the kernel: the tab may have just been opened)."""
        self.show_api = False
        self._wanted = name
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
        """Show ``row``'s full demangled name under the table (Enter again hides it),
        and, for a kernel that cannot be probed, why."""
        why = refusal(row.name)
        text = row.demangled + (f"\n{why}" if why else "")
        self._detail_text = "" if self._detail_text == text else text
        self.detail.update(self._detail_text)
        self._layout()

    def watch_show_api(self, show_api: bool) -> None:
        self._layout()
        if show_api:  # the API table is summed on the worker
            self.recompute()
        elif self._model is not None:
            self.show(self._model)

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
        why = refusal(row.name)
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


register_process_panel(
    "Kernels",
    KernelsTab,
    order=30,
    about=(
        "Every kernel the process ran since the session began (or the last seek), one row per"
        " kernel: its share of the process's GPU time, launches per second, total and mean "
        "time, launch geometry. Enter shows the full name; a switches to the CUDA API calls."
        " A CUDA graph launch is one row, CUDA graph N, unless g (live) traces every node."
    ),
)
