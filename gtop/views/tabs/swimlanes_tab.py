"""Process-screen tab "Swimlanes": the focused process's GPU streams aligned with its
host threads over the last :data:`SPAN_NS` (ending at
:func:`~gtop.views.tabs.session_data.window_end`), with the
:class:`~gtop.views.widgets.swimlanes.Swimlanes` widget's zoom, pan and cursor readout. While the
view is zoomed in it stays put (``0`` zooms out and follows the data again)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult

from gtop.analysis.lanes import Lane, build_lanes
from gtop.analysis.records import Records
from gtop.core.model import Model
from gtop.core.rows import take_rows
from gtop.views.tabs import absence
from gtop.views.tabs.panels import register_process_panel
from gtop.views.tabs.session_data import session_of, window_end
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.swimlanes import Swimlanes

SPAN_NS = 2_000_000_000
MAX_THREADS = 8


@dataclass(frozen=True)
class _Snap:
    records: Records
    t1: int


def of_pid(rec: Records, pid: int) -> Records:
    """Only the rows of process ``pid``."""
    return Records(
        ops=take_rows(rec.ops, rec.ops["pid"] == pid),
        apis=take_rows(rec.apis, rec.apis["pid"] == pid),
        waits=take_rows(rec.waits, rec.waits["pid"] == pid),
        states=take_rows(rec.states, rec.states["pid"] == pid),
        samples=take_rows(rec.samples, rec.samples["pid"] == pid),
    )


class SwimlanesTab(WorkerPanel):
    """Stream lanes, then thread lanes (those calling CUDA first)."""

    DEFAULT_CSS = """
    SwimlanesTab > Swimlanes { height: 1fr; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.lanes = Swimlanes()

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.lanes

    def reason(self, model: Model) -> str | None:
        cuda = absence.cuda_reason(model, self.pid, self.agent_error(), self.live())
        host = absence.threads_reason(model, self.pid, self.live())
        if cuda and host:
            return f"{cuda}; {host}"
        return None

    def snapshot(self, model: Model) -> _Snap | None:
        data = session_of(model)
        if data.engine.watermark is None:
            return None
        return _Snap(data.snapshot(), window_end(model, self.live())[0])

    def compute(self, snap: _Snap | None) -> tuple[list[Lane], int, int] | None:
        if snap is None:
            return None
        t1 = snap.t1
        t0 = t1 - SPAN_NS
        return build_lanes(of_pid(snap.records, self.pid), t0, t1, MAX_THREADS), t0, t1

    def zoomed(self) -> bool:
        """The user zoomed in: keep the view still."""
        w = self.lanes
        return bool(w.lanes) and w.view_span < w.t1 - w.t0

    def apply(self, result: Any) -> None:
        if result is None:
            self.set_note("no records yet")
            return
        if self.zoomed():
            self.set_note("zoomed in: the view is held (0 zooms out and follows again)")
            return
        lanes, t0, t1 = result
        self.set_note("" if lanes else "no streams or threads of this process in the window")
        self.lanes.show(lanes, t0, t1)


register_process_panel(
    "Swimlanes",
    SwimlanesTab,
    order=70,
    about=(
        "The process's GPU streams above its host threads on one time axis, so a gap on the "
        "GPU lines up with what the host did meanwhile. Cell height: busy share (a stream "
        "running work, a thread on a CPU); a letter: why not (l lists them). The last line "
        "reads the cell under the cursor."
    ),
)
