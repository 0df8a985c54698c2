"""gtop never blames the program for its own cost: the ``GTOP`` cause.

gtop's code that runs inside the target on the target's own threads — the PTX probes'
launch hooks and CUPTI's buffer callbacks, both on the launching threads — is timed by
the agent itself (:mod:`gtop.agent.cost`; the ``agent_cost`` entities carry the
cumulative ``probe_s`` and ``callback_s``). On those threads it is on-CPU time outside
the program's own work, which the host-cause rule would call Python/CPU work (``H:APP``)
or, between launches, launching kernels (``H:CTRL``). :func:`charge` moves the agent's
time within a window out of those two causes (``H:APP`` first) into ``GTOP`` on a
breakdown entry, so the seconds still sum to the window; the verdict never names
``GTOP`` (it is not in :data:`~gtop.analysis.attribution.causes.OFF_CAUSES`).

Exact in amount (the agent's own clocks), not in place: the hooks of a launch run while
the GPU may still be busy with the previous ones, so the off-GPU time they took can be
less than their time; ``GTOP`` is then an upper bound, and ``H:APP``/``H:CTRL`` lower
ones. The agent thread's own CPU and GIL time are not charged (they run beside the
target's threads; the status line and the report's ``agent_cost`` show them).

Flamegraphs mark gtop's own frames in a target's stacks (:func:`marked`: ``[gtop] ``
before each), so its hooks never pass for the program's code.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from gtop.analysis.attribution.causes import LABELS, Cause
from gtop.core.hub import Entity

OWN_FRAME = re.compile(
    r"\((?:[^()]*/)?(?:_gtop_[0-9a-f]{16}|gtop)/(?:agent|probes|cupti)/[^()]*\.py\)$"
    r"|^gtop_shim_"
)
"""A frame of gtop's own code inside a target: the agent's private package copy
(``_gtop_<hex>``, :mod:`gtop.collectors.agent.boot`) or gtop's own, and the C shim."""
MARK = "[gtop] "
"""What flamegraphs put before each frame of gtop's own code."""
OWN_KEYS = ("probe_s", "callback_s")
"""The agent's cumulative seconds on the target's threads (``agent_cost`` values)."""
TAKEN_FROM = (LABELS[Cause.H_APP], LABELS[Cause.H_CTRL])
GTOP = LABELS[Cause.GTOP]


def marked(frame: str) -> str:
    """``frame`` marked as gtop's own when it is (:data:`OWN_FRAME`)."""
    return MARK + frame if OWN_FRAME.search(frame) else frame


def own_seconds(costs: Iterable[Entity], t0: int, t1: int) -> float:
    """Seconds of gtop's code on the target's threads within ``[t0, t1)``, summed over
    processes, from their ``agent_cost`` entities (cumulative, each at its time ``t_ns``):
    each process's counter interpolated linearly at both ends between its snapshots."""
    by_pid: dict[str, list[tuple[int, float]]] = {}
    for e in costs:
        if e.kind == "agent_cost":
            value = sum(float(e.value.get(k, 0.0) or 0.0) for k in OWN_KEYS)
            by_pid.setdefault(e.key, []).append((int(e.t_ns), value))
            since = int(e.t_ns) - int(float(e.value.get("elapsed_s", 0.0) or 0.0) * 1e9)
            by_pid[e.key].append((since, 0.0))  # the counters start at the agent's start
    return sum(_between(sorted(points), t0, t1) for points in by_pid.values())


def _at(points: list[tuple[int, float]], t: int) -> float:
    """The counter at ``t``: 0 before the agent started, the last value after the last
    snapshot, linear in between."""
    if t <= points[0][0]:
        return 0.0
    for (ta, va), (tb, vb) in itertools.pairwise(points):
        if t <= tb:
            return va + (vb - va) * (t - ta) / max(1, tb - ta)
    return points[-1][1]


def _between(points: list[tuple[int, float]], t0: int, t1: int) -> float:
    return max(0.0, _at(points, t1) - _at(points, t0))


def charge(entry: dict[str, Any], own_s: float) -> dict[str, Any]:
    """``entry`` (a breakdown, :func:`gtop.analysis.report.gpu_report.unit_summary`) with up to
    ``own_s`` seconds moved from ``H:APP``, then ``H:CTRL``, into ``GTOP`` (added only
    when positive), and ``gtop_s``: what the agent measured (the moved part can be less)."""
    off = dict(entry.get("off", {}))
    left = max(0.0, own_s)
    moved = 0.0
    for label in TAKEN_FROM:
        take = min(left, float(off.get(label, 0.0) or 0.0))
        off[label] = float(off.get(label, 0.0) or 0.0) - take
        moved += take
        left -= take
    if moved > 0:
        off[GTOP] = float(off.get(GTOP, 0.0) or 0.0) + moved
    return {**entry, "off": off, "gtop_s": float(entry.get("gtop_s", 0.0)) + own_s}


def charge_folded(folded: Mapping[str, int], own_ns: int) -> dict[str, int]:
    """A GPU-centric flamegraph (``{folded stack: ns}``) charged as :func:`charge`
    charges a breakdown: up to ``own_ns`` moved from the ``OFF_GPU;H:APP`` stacks, then
    the ``OFF_GPU;H:CTRL`` ones, into ``OFF_GPU;GTOP`` with the same frames. Within a
    cause, stacks with gtop's own frames (:data:`MARK`) give first, then the others in
    proportion to their width (whole ns), so the flamegraph's ``GTOP`` is the breakdown's."""
    out = dict(folded)
    left = max(0, int(own_ns))
    for label in TAKEN_FROM:
        head = f"OFF_GPU;{label};"
        stacks = sorted(
            (k for k in out if k.startswith(head) or k == head[:-1]),
            key=lambda k: (MARK not in k, k),
        )
        for k in (k for k in stacks if MARK in k):
            n = min(left, out[k])
            _move(out, k, n, label)
            left -= n
        rest = [k for k in stacks if MARK not in k]
        total = sum(out[k] for k in rest)
        take = min(left, total)
        if take <= 0:
            continue
        done, acc = 0, 0
        for k in rest:  # cumulative rounding: whole ns that add up to ``take``
            acc += out[k]
            upto = take * acc // total
            _move(out, k, upto - done, label)
            done = upto
        left -= take
    return {k: v for k, v in out.items() if v > 0}


def _move(out: dict[str, int], stack: str, ns: int, label: str) -> None:
    """Move ``ns`` of ``stack`` (under ``label``) to the same frames under ``GTOP``."""
    if ns > 0:
        out[stack] -= ns
        own = stack.replace(f"OFF_GPU;{label}", f"OFF_GPU;{GTOP}", 1)
        out[own] = out.get(own, 0) + ns
