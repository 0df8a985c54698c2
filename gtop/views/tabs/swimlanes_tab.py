"""Process-screen tab "Swimlanes": the GPU streams of the focused process and its
descendants (a launcher's ranks, a loop's DataLoader workers) aligned with their host
threads over the last :data:`SPAN_NS` of the verdict line's window (ending at
:func:`~gtop.views.tabs.session_data.tab_window`'s end; the axis in recording time in a
replay), with the
:class:`~gtop.views.widgets.swimlanes.Swimlanes` widget's zoom, pan and cursor readout. While the
view is zoomed in it stays put (``0`` zooms out and follows the data again)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from textual.app import ComposeResult

from gtop.analysis.attribution.lanes import Code, Lane, build_lanes
from gtop.analysis.attribution.records import Records
from gtop.core.layouts import ThreadState
from gtop.core.model import Model
from gtop.core.rows import take_rows
from gtop.views.fmt import busy
from gtop.views.tabs import absence
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import family, session_of, tab_window
from gtop.views.tabs.thread_filter import busy_tids, gtop_tids
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.swimlanes import Swimlanes, full_view

SPAN_NS = 2_000_000_000
MAX_THREADS = 8
ON_CPU_CODES = (Code.ON_CPU, Code.IN_API)


@dataclass(frozen=True)
class _Snap:
    records: Records
    t1: int
    family: frozenset[int]
    """The process and its descendants, whose lanes are drawn."""
    stacks: dict[int, Any]
    cells: int
    """Cells per lane on screen now (the first view's cells are made on the worker)."""


def of_pids(rec: Records, pids: frozenset[int]) -> Records:
    """Only the rows of the processes ``pids``."""
    keep = np.fromiter(pids, np.int64)
    return Records(
        ops=take_rows(rec.ops, np.isin(rec.ops["pid"], keep)),
        apis=take_rows(rec.apis, np.isin(rec.apis["pid"], keep)),
        waits=take_rows(rec.waits, np.isin(rec.waits["pid"], keep)),
        states=take_rows(rec.states, np.isin(rec.states["pid"], keep)),
        samples=take_rows(rec.samples, np.isin(rec.samples["pid"], keep)),
        untraced=take_rows(rec.untraced, np.isin(rec.untraced["pid"], keep)),
    )


def _callers(rec: Records, t0: int, t1: int) -> set[int]:
    """The threads with a CUDA API call in ``[t0, t1)``."""
    apis = rec.apis[(rec.apis["end"] > t0) & (rec.apis["t"] < t1)]
    return set(np.unique(apis["tid"]).tolist())


def _candidates(rec: Records, callers: set[int], t0: int, t1: int) -> set[int]:
    """The threads that may matter, found without their lanes: the callers, and those
    whose on-CPU state records cover
    :data:`~gtop.views.tabs.thread_filter.BUSY_SHARE` of the window (their lanes'
    on-CPU time is at most that: a call's time without a state is a caller's). Building
    every thread's lane only to drop most took ~0.3 s of the tab's first 1.2 s."""
    s = rec.states[(rec.states["end"] > t0) & (rec.states["t"] < t1)]
    on_cpu = busy_tids(
        s["tid"].astype(np.int64),
        np.maximum(s["t"], t0),
        np.minimum(s["end"], t1),
        s["state"] == ThreadState.ON_CPU,
        t1 - t0,
    )
    return callers | on_cpu


class SwimlanesTab(WorkerPanel):
    """Stream lanes, then the lanes of the threads that matter (those calling CUDA
    first; never gtop's own, nor idle pool threads)."""

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
        stacks = {int(k): v for k, v in model.entity_values("stack").items()}
        width = self.lanes.size.width or self.app.size.width
        cells = self.lanes.cell_count(width)
        window = tab_window(model, self.app.source, self.pid)
        self.lanes.origin = window.origin
        pids = family(model.entity_values("process"), self.pid)
        return _Snap(data.snapshot(), window.t1, pids, stacks, cells)

    def compute(self, snap: _Snap | None) -> tuple[list[Lane], int, int, list[busy.Cells]] | None:
        if snap is None:
            return None
        t1 = snap.t1
        t0 = t1 - SPAN_NS
        rec = of_pids(snap.records, snap.family)
        gtop = gtop_tids(
            np.concatenate((rec.states["tid"], rec.samples["tid"])),
            np.concatenate((rec.states["stack_id"], rec.samples["stack_id"])),
            snap.stacks,
        )
        callers = _callers(rec, t0, t1)
        candidates = _candidates(rec, callers, t0, t1) - gtop
        lanes = build_lanes(
            rec, t0, t1, max_threads=1 << 16, tids=np.fromiter(candidates, np.int64)
        )
        streams = [lane for lane in lanes if not lane.label.startswith("T")]
        threads = [lane for lane in lanes if lane.label[1:].isdigit()]
        matter = self._matter(threads, callers, gtop, t0, t1)
        threads = [lane for lane in threads if int(lane.label[1:]) in matter]
        shown = [*streams, *threads[:MAX_THREADS]]
        return shown, t0, t1, full_view(shown, t0, t1, snap.cells)

    @staticmethod
    def _matter(
        threads: list[Lane], callers: set[int], gtop: set[int], t0: int, t1: int
    ) -> set[int]:
        """The tids of ``threads`` that called CUDA or were on a CPU, never gtop's."""
        if not threads:
            return set()
        tids = np.array([int(lane.label[1:]) for lane in threads], np.int64)
        busy = busy_tids(
            np.repeat(tids, [len(lane.starts) for lane in threads]),
            np.concatenate([lane.starts for lane in threads]),
            np.concatenate([lane.ends for lane in threads]),
            np.concatenate([np.isin(lane.codes, ON_CPU_CODES) for lane in threads]),
            t1 - t0,
        )
        return (busy | callers) - gtop

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
        lanes, t0, t1, cells = result
        self.set_note("" if lanes else "no streams or threads of this process in the window")
        self.lanes.show(lanes, t0, t1, cells)


PANEL = PanelSpec(
    "Swimlanes",
    SwimlanesTab,
    order=70,
    about=(
        "The GPU streams of the process and its children above their host threads on one "
        "time axis (the last 2 s of the window the verdict line names), so a gap on the "
        "GPU lines up with what the host did meanwhile. Cell height: busy share (a stream "
        "running work, a thread on a CPU); a letter: why not (l lists them). The last line "
        "reads the cell under the cursor."
    ),
)
