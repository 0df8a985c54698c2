"""Process-screen tab: the focused process on each GPU (memory and NVML utilisation),
under a line naming its window (the last :data:`~gtop.views.processes.RECENT_S` before
the playhead, or before now live)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from gtop.core.model import Model
from gtop.views.fmt import values as fmt
from gtop.views.processes import RECENT_S, newest
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import recent_label
from gtop.views.widgets.row_table import Column, RowTable

HEADERS = ("GPU", "NAME", "GPU MEM", "SM%", "MEM%", "ENC%", "DEC%")
RIGHT = frozenset({"GPU MEM", "SM%", "MEM%", "ENC%", "DEC%"})


class ProcessGpus(Vertical):
    """One row per GPU the process used in the last :data:`RECENT_S` seconds (its newest
    NVML sample there), or one line saying it used none."""

    DEFAULT_CSS = """
    ProcessGpus { height: 1fr; }
    ProcessGpus > .panel-note { height: auto; color: $text-muted; padding: 0 1; }
    ProcessGpus > RowTable { height: auto; max-height: 100%; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.note = Static("", classes="panel-note")
        self.table = RowTable()

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.table

    def show(self, model: Model) -> None:
        label = recent_label(model, getattr(self.app, "source", None), RECENT_S)
        rows = model.window("proc_gpu", RECENT_S)
        mine = rows[rows["pid"] == self.pid] if rows is not None else []
        if not len(mine):
            self.note.update(f"GPUs, {label}: this process was on no GPU")
            self.table.display = False
            return
        self.note.update(f"GPUs, {label} (the newest NVML sample of each)")
        names = {d.get("index"): d.get("name") for d in model.devices()}
        cells = [
            (
                str(int(row["gpu"])),
                names.get(int(row["gpu"])) or fmt.NA,
                fmt.size(row["gpu_mem"]),
                fmt.pct(row["sm_util"]),
                fmt.pct(row["mem_util"]),
                fmt.pct(row["enc_util"]),
                fmt.pct(row["dec_util"]),
            )
            for row in sorted(newest(mine, mine["gpu"]), key=lambda r: int(r["gpu"]))
        ]
        columns = [
            Column(h, max(len(h), *(len(c[i]) for c in cells)), h in RIGHT)
            for i, h in enumerate(HEADERS)
        ]
        self.table.set_table(columns, cells)
        self.table.display = True


PANEL = PanelSpec(
    "GPUs",
    ProcessGpus,
    order=10,
    about=(
        "The GPUs this process used in the last 5 s (its line names them): its memory and "
        "NVML utilisation on each, from the newest sample."
    ),
)
