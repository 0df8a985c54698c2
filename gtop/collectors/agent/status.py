"""What gtop knows about each agent it talks to (one frozen value per change)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gtop.agent.modes import graph_level

REFUSALS = ("no_cupti", "other_subscriber", "error")
"""Agent states in which it traces nothing (it says why in ``message``)."""


@dataclass(frozen=True)
class AgentStatus:
    """What gtop knows about one agent; counts are cumulative."""

    pid: int
    state: str = "connected"
    message: str = ""
    kinds: tuple[str, ...] = ()
    cupti_version: int | None = None
    callbacks: str = ""
    """where CUPTI's buffer callbacks run: ``c`` (the shim) or ``python`` (fallback)."""
    python: str = ""
    argv: tuple[str, ...] = ()
    records: int = 0
    """records received and decoded."""
    dropped: int = 0
    """records CUPTI dropped (no free buffer: gtop read too slowly)."""
    undecoded_bytes: int = 0
    """bytes of buffers gtop could not walk (unknown record kinds)."""
    incomplete: int = 0
    """GPU records without an end time (in flight at a forced flush)."""
    buffers: int = 0
    declined: int = 0
    """buffer requests the agent declined because every buffer was in flight."""
    first_record_ns: int | None = None
    """CLOCK_MONOTONIC time the first records arrived."""
    records_by_kind: dict[int, int] = field(default_factory=dict)
    cost: dict[str, Any] | None = None
    """The latest ``agent_cost`` value (:func:`gtop.analysis.report.agent_cost.cost_value`)."""
    sampling: dict[str, float] | None = None
    """``{"duty", "rate"}`` while the agent traces in a duty cycle (kernel sampling)."""
    nvtx_off: float | None = None
    """NVTX ranges/s that made gtop stop tracing them (None: not stopped)."""

    def summary(self) -> str:
        """One line for the UI: state, what is traced, counts, drops."""
        parts = [f"agent {self.state}"]
        if self.kinds:
            parts.append(",".join(self.kinds))
            if "kernel" in self.kinds:
                level = "graph-level" if graph_level(self.kinds) else "per node"
                parts.append(f"CUDA graphs {level}")
        if self.cupti_version:
            major, minor = divmod(self.cupti_version // 100, 100)
            parts.append(f"CUPTI {major}.{minor}")
        if self.sampling is not None:
            duty, rate = self.sampling["duty"], self.sampling["rate"]
            parts.append(f"sampling: {duty:.0%} traced at {rate / 1e3:.0f}k records/s")
        if self.nvtx_off is not None:
            parts.append(f"NVTX ranges off at {self.nvtx_off / 1e3:.0f}k/s")
        parts.append(f"{self.records} records")
        parts.append(f"{self.dropped} dropped")
        if self.incomplete:
            parts.append(f"{self.incomplete} incomplete")
        if self.cost is not None:
            from gtop.analysis.report.agent_cost import cost_line  # numpy: not before a launch

            parts.append(cost_line(self.cost))
        if self.message:
            parts.append(self.message)
        return " | ".join(parts)
