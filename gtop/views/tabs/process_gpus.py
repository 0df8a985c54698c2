"""Process-screen tab: the focused process on each GPU (memory and NVML utilization)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from gtop.core.model import Model
from gtop.views.fmt import values as fmt
from gtop.views.processes import RECENT_S, newest
from gtop.views.tabs.panels import register_process_panel

HEADERS = ("GPU", "NAME", "GPU MEM", "SM%", "MEM%", "ENC%", "DEC%")


class ProcessGpus(DataTable):
    """One row per GPU the process used in the last :data:`RECENT_S` seconds."""

    DEFAULT_CSS = "ProcessGpus { height: auto; max-height: 100%; }"

    def __init__(self, pid: int) -> None:
        super().__init__(cursor_type="none", show_cursor=False)
        self.pid = pid

    def show(self, model: Model) -> None:
        rows = model.window("proc_gpu", RECENT_S)
        self.clear(columns=True)  # columns fit what is shown now
        self.add_columns(*HEADERS)
        mine = rows[rows["pid"] == self.pid] if rows is not None else []
        if not len(mine):
            self.add_row("–", f"not on any GPU in the last {RECENT_S:g} s", *[""] * 5)
            return
        names = {d.get("index"): d.get("name") for d in model.devices()}
        for row in sorted(newest(mine, mine["gpu"]), key=lambda r: int(r["gpu"])):
            gpu = int(row["gpu"])
            cells = (
                str(gpu),
                names.get(gpu) or fmt.NA,
                fmt.size(row["gpu_mem"]),
                fmt.pct(row["sm_util"]),
                fmt.pct(row["mem_util"]),
                fmt.pct(row["enc_util"]),
                fmt.pct(row["dec_util"]),
            )
            self.add_row(*(Text(c, no_wrap=True) for c in cells))


register_process_panel(
    "GPUs",
    ProcessGpus,
    order=10,
    about=(
        "The GPUs this process uses: utilisation, memory, power and clocks over the last "
        "minute (NVML)."
    ),
)
