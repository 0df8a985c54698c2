"""Which CUPTI activity kinds each agent mode traces (no side effects: gtop imports it).

The default is the cheap set that meets the overhead target: runtime/driver API records
about double CUPTI's cost on launch-bound code (measured on an H200, 0.56 vs 0.83 of
untraced steps/s with and without them), so they are only in ``full`` (or named
explicitly, e.g. ``kernel,memcpy,runtime``).

CUDA graphs: with ``graph`` on (the default), CUPTI traces each graph launch as one
record (CUPTI_ACTIVITY_KIND_GRAPH_TRACE: the whole graph's start and end on the GPU) and
leaves the kernels inside it out, as Nsight Systems' ``--cuda-graph-trace=graph`` does;
kernels launched outside graphs are traced as before. ``graph-nodes`` traces every node
of every replay as its own kernel record: what a decode step's kernels cost, at a cost
per node on graph replay that ``graph`` avoids. ``full`` traces nodes too.

NVTX ranges (``marker``) are in every mode: a training loop's ``range_push("step")``
costs one record per push and pop, and tells the analysis where its steps are. They
stay on through kernel sampling's off phases (:data:`KEPT_ON`); a process whose ranges
come faster than :data:`~gtop.agent.sampling.RANGES_ABOVE` (a range per op,
``torch.autograd.profiler.emit_nvtx``) has them switched off by gtop's link for the
rest of the session, and a kind list without ``marker`` leaves them out from the start.
"""

from __future__ import annotations

KINDS = ("graph", "kernel", "memcpy", "memset", "sync", "runtime", "driver", "marker", "overhead")
"""``graph`` first: it is enabled before the node-level kinds it changes."""

NODE_KINDS = ("kernel", "memcpy", "memset", "sync")

MODES: dict[str, tuple[str, ...]] = {
    "default": ("graph", *NODE_KINDS, "marker"),
    "graph-nodes": (*NODE_KINDS, "marker"),
    "full": KINDS[1:],
}


SAMPLED_KINDS = frozenset(("graph", *NODE_KINDS))
"""Kinds kernel sampling may switch off (:mod:`gtop.agent.sampling`); asking for any
other than these and :data:`KEPT_ON` (API calls, CUPTI overhead: ``full`` or a kind
list) traces every launch."""
KEPT_ON = frozenset(("marker",))
"""Kinds kernel sampling leaves on in its off phases: NVTX ranges come at the loop's
own pace (a step, not a kernel), and a step cut by an off phase would be lost."""


def graph_level(kinds: tuple[str, ...] | list[str]) -> bool:
    """Whether CUDA graphs are traced one record per launch (else one per node)."""
    return "graph" in kinds


def toggle_graph_nodes(kinds: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``kinds`` with graph-level tracing switched (graph-level <-> per node)."""
    if graph_level(kinds):
        return tuple(k for k in kinds if k != "graph")
    return ("graph", *kinds)


def kinds_for(mode: str) -> tuple[str, ...]:
    """The kinds of a mode name or of a comma-separated list of kinds.

    Raises:
        ValueError: an unknown mode or kind (the message lists the valid ones).
    """
    if mode in MODES:
        return MODES[mode]
    kinds = tuple(k.strip() for k in mode.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(
            f"unknown agent mode or kinds {mode!r}: use {' or '.join(MODES)}, "
            f"or a comma-separated list of {', '.join(KINDS)}"
        )
    return kinds
