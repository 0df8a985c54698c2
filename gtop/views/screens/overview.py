"""The overview: one panel per GPU, then every process, sortable and filterable."""

from __future__ import annotations

import numpy as np
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

from gtop.core.model import Model
from gtop.views.processes import process_rows
from gtop.views.screens.base import GtopScreen
from gtop.views.widgets.gpu_panel import HISTORY_S, GpuHistory, GpuPanel
from gtop.views.widgets.process_table import ProcessTable

MAX_CHART_ROWS = 12
MIN_TABLE_ROWS = 6
"""The process table keeps at least this many rows when the GPUs' history grows."""


class OverviewScreen(GtopScreen):
    """GPUs on top (scrolling past half the screen), processes below."""

    DEFAULT_CSS = """
    OverviewScreen #gpus { height: auto; max-height: 75%; }
    OverviewScreen #no-gpu { height: auto; padding: 0 1; color: $text-muted; }
    OverviewScreen #filter { display: none; height: 1; border: none; padding: 0 1; }
    OverviewScreen #filter.-active { display: block; }
    """

    AUTO_FOCUS = "#processes"

    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter"),
    ]

    def __init__(self, model: Model, *, replay: bool, no_gpu_reason: str | None = None) -> None:
        super().__init__(model, replay=replay)
        self.no_gpu_reason = no_gpu_reason
        self._gpu_indices: list[int] | None = None
        self._panels: list[GpuPanel] = []
        self.gpu_box = VerticalScroll(id="gpus")
        self.filter_box = Input(
            placeholder="filter by command, user or pid (Esc clears)", id="filter"
        )
        self.table = ProcessTable(id="processes")

    def compose_body(self) -> ComposeResult:
        yield self.gpu_box
        yield self.filter_box
        yield self.table

    def show(self, model: Model) -> None:
        self._show_gpus(model)
        rows = process_rows(model)
        self.table.show_rows(rows)
        self._fit_history(len(rows))

    def on_resize(self) -> None:
        self._fit_history(self.table.row_count)

    def _fit_history(self, processes: int) -> None:
        """Give the height the process table does not need to the GPUs' utilisation
        history (up to :data:`MAX_CHART_ROWS` lines each; at 80x24, one)."""
        if not self._panels:
            return
        chrome = 3 + (1 if self.time_bar is not None else 0)  # status, keys, header
        spare = self.size.height - chrome - max(processes, MIN_TABLE_ROWS) - 1
        per_gpu = spare // len(self._panels) - 3
        rows = int(np.clip(per_gpu, 1, MAX_CHART_ROWS))
        for panel in self._panels:
            panel.chart_rows = rows

    def _show_gpus(self, model: Model) -> None:
        rows = model.window("gpu", HISTORY_S)
        if rows is None:
            rows = np.empty(0, dtype=[("t_ns", "<i8"), ("gpu", "<i2")])
        devices = {int(d["index"]): d for d in model.devices()}
        indices = sorted(set(devices) | {int(i) for i in np.unique(rows["gpu"])})
        box = self.gpu_box
        if indices != self._gpu_indices:
            self._gpu_indices = indices
            box.remove_children()
            self._panels = [GpuPanel(index) for index in indices]
            if indices:
                box.mount_all(self._panels)
            else:
                reason = self.no_gpu_reason or "no GPU samples"
                box.mount(Static(f"No GPU data: {reason}", id="no-gpu"))
        for panel in self._panels:
            index = panel.index
            panel.history = GpuHistory(
                index, devices.get(index, {}), rows[rows["gpu"] == index], model.now_ns
            )

    def about(self) -> str:
        return (
            "Every GPU with its last minute of utilisation and memory, then every process "
            "on a GPU and its children, sortable (s) and filterable (/). Enter opens a "
            "process: its kernels, host threads and where its GPU time goes."
        )

    def ready(self) -> bool:
        return self.table.is_mounted and all(p.is_mounted for p in self._panels)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":
            return self.filter_box.has_class("-active")
        return True

    def action_filter(self) -> None:
        """Show the filter box and type into it; Enter returns to the table."""
        box = self.filter_box
        box.add_class("-active")
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.filter_box
        box.value = ""
        box.remove_class("-active")
        self.table.focus()
        self.refresh_bindings()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.table.filter_text = event.value.strip()
        self.refresh_bindings()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            self.action_clear_filter()
        else:
            self.table.focus()
