"""The top of the process screen: who the process is, and its resource history."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gtop.core.model import Model
from gtop.views.fmt import sparkline
from gtop.views.fmt import values as fmt

HISTORY_S = 60.0
"""Time span of the sparklines."""


def per_time(times: np.ndarray, values: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    """Collapse rows sharing a timestamp (one per GPU) by ``"sum"`` or ``"max"``.

    Missing values (NaN, or negative for memory) are left out; a timestamp with no value
    at all stays NaN.
    """
    vals = values.astype(np.float64)
    vals[vals < 0] = np.nan
    uniq, inverse = np.unique(times, return_inverse=True)
    out = np.full(len(uniq), np.nan)
    ok = ~np.isnan(vals)
    if how == "sum":
        sums = np.bincount(inverse[ok], weights=vals[ok], minlength=len(uniq))
        seen = np.bincount(inverse[ok], minlength=len(uniq)) > 0
        out[seen] = sums[seen]
    else:
        np.fmax.at(out, inverse[ok], vals[ok])
    return uniq, out


@dataclass(frozen=True, eq=False)
class ProcessHistory:
    """One process's entity and its recent rows, ending at ``t1``."""

    pid: int
    info: dict[str, Any]
    gpu_rows: np.ndarray
    host_rows: np.ndarray
    t1: int

    @classmethod
    def from_model(cls, model: Model, pid: int) -> ProcessHistory:
        def mine(stream: str) -> np.ndarray:
            rows = model.window(stream, HISTORY_S)
            return np.empty(0) if rows is None else rows[rows["pid"] == pid]

        info = model.entity_values("process").get(str(pid), {})
        return cls(pid, info, mine("proc_gpu"), mine("proc_host"), model.now_ns)


class ProcessSummary(Widget):
    """Identity line, then sparklines of GPU memory, SM%, CPU%, RSS and threads."""

    DEFAULT_CSS = """
    ProcessSummary { height: 5; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    ProcessSummary > .process-summary--title { text-style: bold reverse; }
    ProcessSummary > .process-summary--label { color: $text-muted; }
    ProcessSummary > .process-summary--spark { color: $success; }
    ProcessSummary > .process-summary--exited { color: $error; text-style: bold; }
    """

    COMPONENT_CLASSES = {
        "process-summary--title",
        "process-summary--label",
        "process-summary--spark",
        "process-summary--exited",
    }

    history: reactive[ProcessHistory | None] = reactive(None, layout=False)
    """The data drawn; replaced on every model update."""

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid

    def show(self, model: Model) -> None:
        self.history = ProcessHistory.from_model(model, self.pid)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"process-summary--{name}", partial=True)

    def _identity(self, h: ProcessHistory) -> list[Text]:
        """``PID (ns pid) user state parent started``, then the whole command line."""
        info = h.info
        state: Text | str = "running"
        if not info:
            state = "no data yet"
        elif info.get("exited"):
            state = Text("✝ exited", style=self._style("exited"))
        ns = f" (ns pid {info['ns_pid']})" if info.get("ns_pid") else ""
        title = Text(f"▌PID {h.pid}{ns}", style=self._style("title"))
        started = info.get("create_time")
        when = time.strftime("%H:%M:%S", time.localtime(started)) if started else fmt.NA
        parent = info.get("ppid")
        line1 = Text.assemble(
            title,
            "  ",
            (info.get("user") or fmt.NA, "bold"),
            "  ",
            state,
            ("  parent ", self._style("label")),
            str(parent) if parent is not None else fmt.NA,
            ("  started ", self._style("label")),
            when,
        )
        line2 = Text.assemble(
            ("cmd ", self._style("label")),
            fmt.command(info.get("cmdline"), info.get("name"), short=True),
        )
        return [line1, line2]

    def render(self) -> Text:
        h = self.history
        if h is None:
            return Text(f"PID {self.pid}: waiting for data…")
        width = max(self.content_size.width, 40)
        half = width // 2
        t0 = h.t1 - int(HISTORY_S * 1e9)
        label = self._style("label")

        def cell(
            name: str, rows: np.ndarray, field: str, how: str, text: Callable[[Any], str]
        ) -> Text:
            """``name ▁▂▃ value``: the field per sample time (summed or max over GPUs)."""
            spark_w = max(6, half - 9 - 13)
            if len(rows):
                times, vals = per_time(rows["t_ns"], rows[field], how)
                seen = vals[~np.isnan(vals)]
                floor = 100.0 if field.endswith(("util", "pct")) else 1.0
                hi = max(floor, float(seen.max())) if len(seen) else floor
                graph = sparkline.spark(times, vals, t0, h.t1, spark_w, 0.0, hi)
                last = vals[-1]
            else:
                graph, last = " " * spark_w, np.nan
            return Text.assemble(
                (f"{name:<8} ", label),
                (graph, self._style("spark")),
                " ",
                text(last).rjust(10),
                "  ",
            )

        gpu, host = h.gpu_rows, h.host_rows
        grid = [
            (
                cell("GPU mem", gpu, "gpu_mem", "sum", fmt.size),
                cell("SM", gpu, "sm_util", "max", fmt.pct),
            ),
            (
                cell("CPU", host, "cpu_pct", "max", fmt.pct),
                cell("RSS", host, "rss", "max", fmt.size),
            ),
            (cell("threads", host, "threads", "max", fmt.num), self._io(host)),
        ]
        lines = self._identity(h)
        for left, right in grid:
            left.pad_right(max(0, half - left.cell_len))
            lines.append(Text.assemble(left, right))
        out = Text("\n").join(lines)
        out.no_wrap = True
        out.overflow = "ellipsis"
        return out

    def _io(self, host: np.ndarray) -> Text:
        label = self._style("label")
        if not len(host):
            return Text.assemble(("I/O ", label), fmt.NA)
        last = host[-1]
        return Text.assemble(
            ("I/O read ", label),
            fmt.rate(last["read_bps"]),
            (" write ", label),
            fmt.rate(last["write_bps"]),
        )
