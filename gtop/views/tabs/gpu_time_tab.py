"""Process-screen tab "GPU time" (issue 5): where the focused process's GPU time went.

Over the window of :func:`~gtop.views.tabs.session_data.tab_window` (a replay at the
report's window: that window, exactly as ``gtop report`` covers it; else the last
:data:`~gtop.views.tabs.session_data.WINDOW_NS`, starting no earlier than the process's
first kernel, so startup is not counted), named in the tab's head: the on/off-GPU ribbon
(busy-fraction cells across the whole window), the off-GPU breakdown bar
with GAR and absolute times, and the GPU-centric flamegraph. Attribution runs on a worker
thread over a snapshot of the session's
:class:`~gtop.analysis.attribution.sliding_window.AttributionEngine`.
Without CUPTI data for the process, the NVML approximation
(:mod:`gtop.analysis.attribution.approximate`) is shown instead, labelled "approximate".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np
from textual.app import ComposeResult

from gtop.analysis.attribution import gpu_flame
from gtop.analysis.attribution.approximate import approximate
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.own_cost import charge, charge_folded, own_seconds
from gtop.analysis.attribution.partition import UnitResult, attribute, stream_keys
from gtop.analysis.attribution.records import Records
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.analysis.report.gpu_report import unit_summary
from gtop.core import layouts
from gtop.core.hub import Entity
from gtop.core.model import Model
from gtop.views.fmt.busy import Cells
from gtop.views.fmt.cause_frames import plain_frames
from gtop.views.tabs import absence
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import (
    LAG_NS,
    WINDOW_NS,
    TabWindow,
    family,
    session_of,
    tab_window,
)
from gtop.views.tabs.shared_work import SharedWork
from gtop.views.tabs.worker_panel import WorkerPanel
from gtop.views.widgets.flamegraph import FlameGraph, Path
from gtop.views.widgets.gpu_ribbon import GpuRibbon, ribbon_cells
from gtop.views.widgets.offgpu_bar import OffGpuBar

SHORT = 30
"""A tab shorter than this many rows shows the breakdown's largest causes only."""
GPU_BEFORE_NS = 5_000_000_000
"""NVML samples taken before the window (its first sample's interval starts earlier)."""
FLAME_SLICE_NS = 1_000_000
"""One flamegraph slice: each slice of the window emits one folded stack."""


@dataclass(frozen=True)
class _Snap:
    records: Records
    window: TabWindow
    gpu: np.ndarray
    device: int
    kernel_names: Mapping[int, str]
    stacks: Mapping[int, Sequence[str]]
    agent_reason: str
    active_from: int | None = None
    """The process's first kernel start seen, where its active time begins."""
    active_to: int | None = None
    """Its last kernel's end, once it has exited: the time after is not idle GPU (as
    the report's "after" phase), and it has no threads left to charge it to."""
    width: int = 0
    """The ribbon's width, to make its cells on the worker (0: not known)."""
    family: frozenset[int] = frozenset()
    """The process and its descendants (a launcher's GPU work is its ranks')."""
    costs: tuple[Entity, ...] = ()
    """The family's ``agent_cost`` entities: gtop's own time in them (``GTOP``)."""
    token: Hashable | None = None
    """What the records were built from (:attr:`SessionData.token`; None: unknown)."""


@dataclass(frozen=True)
class _Result:
    result: UnitResult
    lag_ns: int
    folded: dict[Path, float]
    note: str
    label: str
    """The window attributed, named (:meth:`TabWindow.label`)."""


def pid_device(model: Model, pid: int) -> int:
    """The GPU ``pid`` used most recently (NVML's per-process rows), else the first GPU."""
    rows = model.window(layouts.PROC_GPU.name, model.history_s)
    if rows is not None:
        mine = rows[rows["pid"] == pid]
        if len(mine):
            return int(mine["gpu"][-1])
    devices = model.devices()
    return int(devices[0].get("index", 0)) if devices else 0


def _has_ops(records: Records, pid: int) -> bool:
    return bool(len(records.ops) and (records.ops["pid"] == pid).any())


_SHARED = SharedWork()


def shared(what: str, snap: _Snap, pid: int, compute: Callable[[], Any]) -> Any:
    """``compute()``, done once for the same ``what`` over the same inputs: workers asking
    at once share one computation, and a replay that comes back to a window it showed
    (a seek back, End after the last GPU work, Enter again) finds it done."""
    gpu_end = int(snap.gpu["t_ns"][-1]) if len(snap.gpu) else 0
    rec = snap.records  # its arrays are the engine's own while no new rows arrive
    rows = snap.token or tuple(id(getattr(rec, f.name)) for f in fields(rec))
    key = (
        what,
        rows,
        replace(snap.window, lag_ns=0),  # (how far before now it ends: not its rows)
        pid,
        snap.active_from,
        _exit_end(snap),  # (the process's exit changes nothing ending after its window)
        snap.device,
        len(snap.gpu),
        gpu_end,
        len(snap.kernel_names),
        len(snap.stacks),
        tuple((e.key, e.t_ns) for e in snap.costs),
        snap.agent_reason,
    )
    return _SHARED.get(key, None if snap.token else snap.records, compute)


def forget() -> None:
    """Drop the results :func:`shared` keeps (what a new process starts with)."""
    _SHARED.clear()


def gpu_time(snap: _Snap, pid: int) -> _Result | None:
    """Attribute the window for ``pid`` (exactly, else approximately); None: no data
    (:func:`shared`)."""
    result = shared("gpu time", snap, pid, lambda: _gpu_time(snap, pid))
    if result is None:
        return None
    return replace(result, lag_ns=snap.window.lag_ns + snap.window.t1 - result.result.t1)


def _exit_end(snap: _Snap) -> int | None:
    """Where a sliding window ends instead when the process exited before its end: its
    last GPU work's end (the report's window ends there already); else None."""
    end = snap.active_to
    return end if snap.window.kind is None and end is not None and end < snap.window.t1 else None


def _gpu_time(snap: _Snap, pid: int) -> _Result | None:
    rec = snap.records
    t0, t1 = snap.window.t0, snap.window.t1
    exit_end = _exit_end(snap)
    ended = exit_end is not None
    if exit_end is not None:
        t1 = exit_end
        t0 = t1 - WINDOW_NS
    if snap.window.kind is None:
        t0 = _cut_start(snap, pid, t0, t1)
    if _has_ops(rec, pid):
        units = attribute(rec, t0, t1, "process", known=stream_keys(rec.ops))
        own = sorted((u for u in units if u.pid == pid), key=lambda u: u.device)
        if not own:
            return None
        unit = own[0]
        res = units[unit]
        how = "CUPTI, sampled" if res.estimate is not None else "exact (CUPTI)"
        note = f"GPU{unit.device} · process {pid} · {how}"
    elif len(rec.ops) and bool(np.isin(rec.ops["pid"], list(snap.family)).any()):
        # a launcher: its children's GPU, as gtop report sees the device (the GPU that
        # explains the most, the least time without host data)
        units = attribute(rec, t0, t1, "device", known=stream_keys(rec.ops))
        if not units:
            return None
        unit = min(units, key=lambda u: (int(units[u].totals[Cause.UNKNOWN]), u.device))
        res = units[unit]
        how = "CUPTI, sampled" if res.estimate is not None else "exact (CUPTI)"
        note = f"GPU{unit.device} · process {pid}'s children · {how}"
    else:
        if not len(snap.gpu):
            return None
        res = approximate(snap.gpu, rec, snap.device, pid, t0, t1, snap.stacks)
        note = (
            f"APPROXIMATE: GPU{snap.device} NVML utilisation + host thread states "
            f"(no CUDA activity: {snap.agent_reason})"
        )
    label = snap.window.label(t0, t1) + (", up to its exit" if ended else "")
    flame = gpu_flame.fold(res, rec, snap.kernel_names, snap.stacks, FLAME_SLICE_NS)
    flame = charge_folded(flame, round(own_seconds(snap.costs, res.t0, res.t1) * 1e9))
    folded = {tuple(k.split(";")): ns / 1e9 for k, ns in flame.items()}
    return _Result(res, 0, folded, f"{note} · {label}", label)  # (lag: gpu_time's)


def _cut_start(snap: _Snap, pid: int, t0: int, t1: int) -> int:
    """A sliding window's start: not before the process's first GPU work (its startup
    is not idle GPU, issue 13), nor before the session's first data ("no data" is not a
    cause)."""
    if snap.active_from is not None and t0 < snap.active_from < t1:
        t0 = snap.active_from
    rec = snap.records
    first = [
        int(a.min())
        for a in (rec.states["t"][rec.states["pid"] == pid], snap.gpu["t_ns"])
        if len(a)
    ]
    if first and t0 < min(first) < t1:
        t0 = min(first)
    return t0


def summary(snap: _Snap, res: UnitResult) -> dict[str, Any]:
    """The breakdown of ``res`` with gtop's own time in the snapshot's processes charged
    to ``GTOP`` (:mod:`gtop.analysis.attribution.own_cost`), as the report does."""
    entry = unit_summary(res)
    own = own_seconds(snap.costs, res.t0, res.t1)
    return charge(entry, own) if own > 0 else entry


def take_snapshot(model: Model, pid: int, source: Any, agent_error: str | None) -> _Snap:
    """UI thread: what :func:`gpu_time` needs of ``model`` for ``pid`` over the window
    of :func:`~gtop.views.tabs.session_data.tab_window` (``source``: the app's)."""
    window = tab_window(model, source, pid)
    live = bool(getattr(source, "live", True))
    data = session_of(model)
    span_ns = max(WINDOW_NS + LAG_NS, window.t1 - window.t0)
    samples = model.streams.get(layouts.GPU.name)  # (up to the window's end: its rows)
    gpu = samples.window(window.t1 - span_ns - GPU_BEFORE_NS, window.t1) if samples else None
    processes = model.entity_values("process")
    exited = bool(processes.get(str(pid), {}).get("exited"))
    mine = family(processes, pid)
    costs = model.entities.get("agent_cost", {})
    return _Snap(
        family=mine,
        costs=tuple(e for key, e in costs.items() if key.isdigit() and int(key) in mine | {pid}),
        records=data.snapshot(),
        window=window,
        gpu=gpu if gpu is not None else layouts.GPU.empty(0),
        device=pid_device(model, pid),
        kernel_names=names_from_entities(model.entities.get("kernel_name", {}).values()),
        stacks={int(k): list(v.get("frames", [])) for k, v in model.entity_values("stack").items()},
        agent_reason=absence.agent_reason(model, pid, agent_error, live),
        active_from=data.kernel_span.get(pid, (None, None))[0],
        active_to=data.kernel_span[pid][1] if exited and pid in data.kernel_span else None,
        token=data.token,
    )


class GpuTimeTab(WorkerPanel):
    """Ribbon, breakdown bar and GPU-centric flamegraph of the focused process."""

    DEFAULT_CSS = """
    GpuTimeTab > FlameGraph { height: 1fr; min-height: 4; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.ribbon = GpuRibbon()
        self.bar = OffGpuBar()
        self.flame = FlameGraph()
        self.last: _Result | None = None
        """The latest attribution shown (tests compare it with the analysis)."""

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.ribbon
        yield self.bar
        yield self.flame

    def on_resize(self) -> None:
        """On a short screen the breakdown keeps 4 lines, leaving rows to the flamegraph."""
        self.bar.max_lines = 4 if self.size.height < SHORT else 0

    def reason(self, model: Model) -> str | None:
        data = session_of(model)
        if _has_ops(data.engine.records(), self.pid):
            return None
        gpu = model.streams.get(layouts.GPU.name)
        if gpu is None or not gpu.rows:
            cuda = absence.agent_reason(model, self.pid, self.agent_error(), self.live())
            return f"no GPU time: no CUDA activity ({cuda}) and no NVML samples"
        return None

    def snapshot(self, model: Model) -> _Snap:
        snap = take_snapshot(model, self.pid, self.app.source, self.agent_error())
        return replace(snap, width=self.ribbon.size.width or self.app.size.width)

    def compute(self, snap: _Snap) -> tuple[_Result, Cells, dict[str, Any]] | None:
        result = gpu_time(snap, self.pid)
        if result is None:
            return None
        res = result.result
        cells = ribbon_cells(res.partition, res.t0, res.t1, max(1, snap.width))
        return result, cells, summary(snap, res)

    def apply(self, computed: Any) -> None:
        if computed is None:
            self.set_note("no GPU work of this process in the window")
            return
        result, cells, breakdown = computed
        self.last = result
        self.set_note(result.note)
        self.ribbon.exact = result.result.exact
        res = result.result
        self.ribbon.show(res.partition, res.t0, res.t1, result.lag_ns, cells)
        self.bar.summary = breakdown
        self.flame.folded, sampled = plain_frames(result.folded)
        self.flame.total_label = "traced" if sampled else "total"
        self.flame.border_title = "GPU-centric flamegraph"


PANEL = PanelSpec(
    "GPU time",
    GpuTimeTab,
    order=60,
    about=(
        "Where the process's wall-clock time went over the window its head names (in a "
        "replay that opened at the report's window, the one gtop report covers; else the "
        "last 10 s), seen from the GPU. The "
        "ribbon's height is the GPU's busy share of each slice; its colour, or its letter "
        "when the GPU did nothing, is the reason that held the slice. The breakdown names "
        "each reason in plain words with its code (l explains them); the flamegraph shows "
        "which kernels and which host code held the time."
    ),
)
