"""Tensor-core activity of one launch (from the tensorop probe): a summary per
instruction class, then one timeline row per warp from its first to its last tensor op."""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual.reactive import reactive

from gtop.probes.catalog.tensorop import TensorOps
from gtop.views.widgets.zoom_pan import ZoomPan

LABEL = 18  # "b1023 w3 SM 131 │"


class TensorOpView(ZoomPan):
    """Give it ``ops`` (the output of ``tensorop.analyse``). Keys (see :class:`ZoomPan`):
    zoom/pan time, scroll warps."""

    probe_view = "tensorops"
    ops: reactive[TensorOps | None] = reactive(None, always_update=True)
    """What to draw; None shows a hint."""

    def __init__(self, ops: TensorOps | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.set_reactive(TensorOpView.ops, ops)

    def show_result(self, ops: TensorOps | None) -> None:
        """Draw the tensorop probe's result for one launch."""
        self.ops = ops

    def has_data(self) -> bool:
        return self.ops is not None

    def row_count(self) -> int:
        return len(self.ops.start) if self.ops else 0

    def render(self) -> Text:
        t = self.ops
        if t is None:
            return Text("No tensor-op records: toggle the tensorop probe on a Triton kernel.")
        out = Text(no_wrap=True, overflow="crop")
        total = sum(c.count for c in t.per_class.values()) or 1
        for name, c in t.per_class.items():
            out.append(f"{name:<34} ", "bold")
            out.append(f"{c.count:>12,} ops {c.cycles_per_op:7.1f} cyc/op {c.count / total:5.0%}\n")
        if t.wait_count:
            out.append(f"{'wgmma.wait_group':<34} {t.wait_count:>12,} waits (end the spans)\n")
        if not len(t.start):
            out.append("no warp issued a tensor-core instruction")
            return out
        width = max(self.size.width - LABEL, 10)
        rows = max(self.size.height - len(t.per_class) - 4, 1)
        out.append(f"{'block  warp    SM':<{LABEL - 1}} │ ", "dim")
        out.append("each warp's tensor-op span: first mma to its last wait\n", "dim")
        lo, hi = self.window(t.span_ns)
        edges = np.linspace(lo, hi, width + 1)
        for i in range(self.top, min(self.top + rows, len(t.start))):
            out.append(f"b{t.block[i]:<5} w{t.warp[i]:<2} SM{t.smid[i]:>4} │", "dim")
            on = (edges[1:] > t.start[i]) & (edges[:-1] < t.end[i])
            out.append("".join("━" if x else " " for x in on), "bold #87d75f")
            out.append("\n")
        out.append(f"{lo / 1e3:.1f} µs … {hi / 1e3:.1f} µs, {len(t.start)} warps", "dim")
        return out
