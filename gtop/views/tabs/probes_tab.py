"""Process-screen tab: the process's probed kernel launches and what the probes saw.

The top table lists probed launches (kernel, probe, grid, records kept and dropped,
which launches were probed: 1 in N, chosen by the agent to keep the probe's cost within
its budget unless every launch was asked for). The line under it gives the selected
launch's geometry and what the probe costs the target. The selected launch's kernel is
shown in the view of one probe, picked by the key its catalog entry names
(:mod:`gtop.probes.catalog`: ``s`` per-SM block schedule, ``t`` tensor-op timeline,
``m`` DMAT); ``+``/``-`` zoom and ``,``/``.`` pan the shown view's time axis and ``a``
switches a view that has two time alignments (the DMAT: %globaltimer or per-SM clock)
while the launch table has the focus (Tab focuses the view itself, for its own keys:
rows, page zoom).

Each view draws the launch of that kernel carrying its probe (the selected one, or the
sibling launch closest in time). Records come from the model's probe streams and
``probe_launch`` entities, so live sessions and replays draw the same way.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, DataTable, Static

from gtop.analysis.kernels import probes as data
from gtop.core.model import Model
from gtop.probes.catalog import ENTRIES
from gtop.probes.record_streams import ProbeLaunch
from gtop.views.tabs.panels import PanelSpec
from gtop.views.widgets.probe_views import PROBE_VIEWS
from gtop.views.widgets.zoom_pan import ZoomPan

FIRST_VIEW = next(iter(ENTRIES.values())).view
COLUMNS = ("#", "Kernel", "Probe", "Grid", "Records", "Dropped", "Sample")
"""Launch geometry in full (grid and block) is on the line under the table."""
LOOK_AGAIN_NS = 2_000_000_000
"""How often to search the kernel records again for a probed kernel's geometry."""
EMPTY = (
    "No probed launches for this process. Probes work on Triton kernels (PyTorch "
    "built-in and cuBLAS kernels ship SASS only): select one in the Kernels tab and "
    "toggle a probe."
)


def _sampled(x: ProbeLaunch) -> str:
    """The Sample column: which launches were probed (``1/12 auto``: 1 in 12, chosen by
    the agent to keep its cost within budget; ``all``: every launch)."""
    launches = "all" if x.every <= 1 else f"1/{x.every}"
    return f"{launches} auto" if x.auto else launches


def cost_text(x: ProbeLaunch) -> str | None:
    """What probing this kernel costs the target, as the agent measured it, e.g.
    ``probe cost 3.1% of the target's time (budget 5%)``; None when unknown."""
    if x.cost < 0:
        return None
    budget = f" (budget {x.budget:.0%})" if x.auto and x.budget > 0 else ""
    return f"probe cost {100 * x.cost:.1f}% of the target's time{budget}"


def _dims(d: tuple[int, ...]) -> str:
    """``32×32×1``; ``?`` where the agent could not tell the launch geometry."""
    return "×".join(str(int(x)) for x in d) if any(d) else "?"


class ProbesTab(Vertical):
    """Probed launches of ``pid`` and the selected kernel's probe views."""

    DEFAULT_CSS = """
    ProbesTab { height: 1fr; }
    ProbesTab > DataTable { height: 5; }
    ProbesTab > #probe-info { height: 1; padding: 0 1; }
    ProbesTab > ContentSwitcher { height: 1fr; }
    """

    BINDINGS = [
        *(Binding(e.view_key, f"view('{e.view}')", e.title) for e in ENTRIES.values()),
        Binding("a", "align", "Time alignment"),
        Binding("z", "zoom(2)", "Zoom in"),
        Binding("x", "zoom(0.5)", "Zoom out"),
        Binding("shift+left", "pan(-1)", "Earlier", show=False),
        Binding("shift+right", "pan(1)", "Later", show=False),
    ]

    selected: reactive[str | None] = reactive(None)
    """Entity key (``pid:launch``) of the selected launch; None when there is none."""
    view: reactive[str] = reactive(FIRST_VIEW)
    """Id of the view shown (a catalog entry's ``view``)."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self._launches: list[ProbeLaunch] = []
        self._model: Model | None = None
        self._drawn: dict[str, tuple] = {}  # view id -> (launch key, records seen)
        self._shapes: dict[str, data.Shape] = {}  # kernel -> (grid, block), once traced
        self._looked_ns = 0  # when the kernel records were last searched for shapes
        self.table: DataTable = DataTable(cursor_type="row", zebra_stripes=True)
        self.info = Static(EMPTY, id="probe-info")
        self.views: dict[str, ZoomPan] = {
            e.view: PROBE_VIEWS[e.view](id=e.view) for e in ENTRIES.values()
        }

    def compose(self) -> ComposeResult:
        yield self.table
        yield self.info
        with ContentSwitcher(initial=FIRST_VIEW):
            yield from self.views.values()

    def on_mount(self) -> None:
        self.table.add_columns(*COLUMNS)

    # --- ModelView ---------------------------------------------------------------------

    def show(self, model: Model) -> None:
        self._model = model
        found = data.launches(model, self.pid)
        unknown = {x.kernel for x in found if not any(x.grid)} - set(self._shapes)
        if unknown and model.now_ns - self._looked_ns >= LOOK_AGAIN_NS:
            self._looked_ns = model.now_ns
            self._shapes.update(data.geometry(model, self.pid, unknown))
        found = data.with_geometry(found, self._shapes)
        if [x.value() for x in found] != [x.value() for x in self._launches]:
            self._launches = found
            self._fill_table()
        self._draw()

    def _fill_table(self) -> None:
        keep = self.selected
        self.table.clear()
        for x in self._launches:
            cells = (
                str(x.launch),
                x.kernel,
                x.probe,
                _dims(x.grid),
                f"{x.records:,}",
                Text(f"{x.dropped:,}", style="bold red" if x.dropped else ""),
                _sampled(x),
            )
            self.table.add_row(*cells, key=self._key(x))
        keys = [self._key(x) for x in self._launches]
        if keep in keys:
            self.table.move_cursor(row=keys.index(keep))
        elif keys:
            self.selected = keys[0]

    @staticmethod
    def _key(x: ProbeLaunch) -> str:
        return f"{x.pid}:{x.launch}"

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None and event.row_key.value != self.selected:
            self.selected = event.row_key.value
            launch = self._launch()
            if launch is not None:
                self.view = ENTRIES[launch.probe].view

    def watch_selected(self) -> None:
        self._draw()

    def watch_view(self, view: str) -> None:
        if self.is_mounted:
            self.query_one(ContentSwitcher).current = view
        self._draw()

    def action_view(self, view: str) -> None:
        self.view = view

    def _current(self) -> ZoomPan:
        return self.views[self.view]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Time keys act on the view shown (greyed like it); ``a`` only where it aligns."""
        if action == "align":
            current = self._current()
            return True if current.aligns and current.has_data() else None
        if action in ("zoom", "pan"):
            return self._current().check_action(action, parameters)
        return True

    def why_disabled(self, action: str) -> str | None:
        """Why a greyed key does nothing here (the footer says it)."""
        if action != "align":
            return None
        return "no data" if not self._current().has_data() else "this view has no time to align"

    def action_align(self) -> None:
        self._current().action_toggle_align()

    def action_zoom(self, factor: float) -> None:
        self._current().action_zoom(factor)

    def action_pan(self, step: int) -> None:
        self._current().action_pan(step)

    # --- drawing -----------------------------------------------------------------------

    def _launch(self) -> ProbeLaunch | None:
        return next((x for x in self._launches if self._key(x) == self.selected), None)

    def _draw(self) -> None:
        selected = self._launch()
        if selected is None or self._model is None:
            self.info.update(self._latest_answer() or EMPTY)
            return
        probe = next(name for name, e in ENTRIES.items() if e.view == self.view)
        launch = data.sibling(self._launches, selected, probe)
        self.info.update(self._describe(selected, launch, probe))
        if launch is None:
            self._set(probe, None, None)
            return
        rows = data.records(self._model, launch)
        token = (self._key(launch), 0 if rows is None else len(rows))
        if self._drawn.get(self.view) == token:
            return
        self._drawn[self.view] = token
        self._set(probe, launch, rows)

    def _set(self, probe: str, launch: ProbeLaunch | None, rows) -> None:
        entry = ENTRIES[probe]
        self.views[entry.view].show_result(entry.analyse(rows, launch))

    def _latest_answer(self) -> Text | None:
        """The agent's latest answer to a probe request, while no launch is listed."""
        if self._model is None:
            return None
        states = data.control_states(self._model, self.pid)
        if not states:
            return None
        last = list(states.values())[-1]
        style = "" if last.get("ok") else "bold red"
        return Text(f"{last.get('probe')} {last.get('kernel')}: {last.get('message')}", style)

    @staticmethod
    def _describe(selected: ProbeLaunch, launch: ProbeLaunch | None, probe: str) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(selected.kernel, "bold")
        text.append(f"  grid {_dims(selected.grid)} block {_dims(selected.block)}")
        if selected.sms > 0:
            text.append(f"  {selected.sms} SMs")
        if selected.sample > 1:
            text.append(f"  1 access in {selected.sample}")
        cost = cost_text(selected)
        if cost:
            text.append(f"  {cost}", "dim")
        if launch is None:
            text.append(f"  no {probe} launch of this kernel", "yellow")
        else:
            text.append(f"  {probe} launch #{launch.launch}", "dim")
        return text


PANEL = PanelSpec(
    "Probes",
    ProbesTab,
    order=80,
    about=(
        "Inside Triton kernels, from PTX probes: per-SM block schedule, tensor-core timing, "
        "memory-access timeline (DMAT), from a recording with probes or a Triton kernel "
        "probed live from Kernels. Schedule: kernel wall time runs start to end, block time "
        "sums all blocks' durations; SM rows end with busy and sched (l explains)."
    ),
)
