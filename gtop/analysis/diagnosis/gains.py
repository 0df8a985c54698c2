"""Predicted gains: each usual fix replayed (:mod:`gtop.analysis.diagnosis.what_if`) and ranked by
what it buys, with its uncertainty; and a user's own ``--what-if`` questions.

A prediction's range is the spread of its assumptions (a CUDA graph's inter-node gap,
the GPU's cost of offloaded host work) widened by the model's own error: how far the
unchanged replay lands from the recording, at least :data:`MIN_ERROR`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution.records import OP_KERNEL, Records
from gtop.analysis.diagnosis.what_if import (
    GRAPH_GAP_RANGE,
    OFFLOAD_COST,
    OFFLOAD_RANGE,
    Change,
    Outcome,
    Timeline,
    build_timeline,
    gpu_gap,
    regular_steps,
    replay,
    sync_starts,
)
from gtop.analysis.kernels.demangle import demangle, shorten

MIN_ERROR = 0.15
"""The least relative uncertainty of a prediction: the committed before/after pairs land
within about this of the measured speedups (benchmarks/what_if_pairs.py)."""
MIN_SHARE = 0.02
"""A cause below this share of the window gets no recommendation."""
KERNEL_SPEEDUP = 0.5
"""The top kernel's recommendation asks what it buys at twice its speed."""


@dataclass(frozen=True)
class Prediction:
    """What ``change`` (its ``--what-if`` text) buys: ``speedup`` (low to high) in
    steps/s or, without steps, in wall time for the same GPU work; GAR before (as
    recorded) and after; the step time before (recorded) and after; the dominant cause
    after."""

    fix: str
    change: str
    speedup: float
    low: float
    high: float
    gar_before: float
    gar_after: float
    before_step_s: float | None
    after_step_s: float | None
    dominant_after: str

    def as_json(self) -> dict:
        out = asdict(self)
        for k in ("speedup", "low", "high", "gar_before", "gar_after"):
            out[k] = round(out[k], 3)
        for k in ("before_step_s", "after_step_s"):
            out[k] = None if out[k] is None else round(out[k], 6)
        return out

    def line(self) -> str:
        """``use CUDA graphs: predicted ×8.4 (×7.1–9.7), GAR 8% → 98%``."""
        return (
            f"{self.fix}: predicted {times(self.speedup)} ({times(self.low)}–"
            f"{times(self.high)}), GAR {self.gar_before:.0%} → {self.gar_after:.0%}"
        )


def times(x: float) -> str:
    """A speedup as the report writes it: ``×1.29``, ``×8.4``, ``×12``."""
    if x >= 10:
        return f"×{x:.0f}"
    return f"×{x:.1f}" if x >= 2 else f"×{x:.2f}"


def measured(tl: Timeline) -> Outcome:
    """The recording itself over the span a replay measures (its regular steps, else the
    window): wall time and GPU busy time."""
    a = regular_steps(tl) if tl.steps is not None else np.empty(0, np.int64)
    if len(a) >= 2:
        t_a, t_b, steps = int(tl.start[a[0]]), int(tl.start[a[-1]]), len(a) - 1
    else:
        t_a, t_b, steps = tl.t0, tl.t1, 0
    busy = iv.clip(iv.union(tl.start, tl.end), t_a, t_b).measure()
    return Outcome(t_b - t_a, busy, steps, {})


def predict(
    tl: Timeline,
    changes: Sequence[Change],
    fix: str = "",
    scenarios: Sequence[Sequence[Change]] = (),
    base: Outcome | None = None,
    before: Outcome | None = None,
) -> Prediction:
    """What ``changes`` buy on ``tl``; ``scenarios``: the same change under its
    pessimistic and optimistic assumptions (the range), ``base``/``before``: the
    unchanged replay and the recording, when already computed."""
    base = base or replay(tl)
    before = before or measured(tl)
    after = replay(tl, changes)
    scenarios = scenarios or assumptions(tl, changes)
    speedup = _ratio(base, after)
    error = max(MIN_ERROR, abs(_ratio(before, base) - 1.0))
    spread = [_ratio(base, replay(tl, s)) for s in scenarios] + [speedup]
    steps = before.steps > 0
    step_ns = tl.window_steps[1] if steps and tl.window_steps else before.step_ns
    return Prediction(
        fix=fix or " and ".join(c.text() for c in changes),
        change=" ".join(c.text() for c in changes),
        speedup=speedup,
        low=max(min(spread) * (1 - error), 0.0),
        high=max(spread) * (1 + error),
        gar_before=before.gar,
        gar_after=after.gar,
        before_step_s=step_ns / 1e9 if steps else None,
        after_step_s=step_ns / speedup / 1e9 if steps else None,
        dominant_after=after.dominant(),
    )


def assumptions(tl: Timeline, changes: Sequence[Change]) -> list[list[Change]]:
    """``changes`` under their pessimistic and optimistic assumptions: a CUDA graph's
    inter-node gap (:data:`GRAPH_GAP_RANGE`), offloaded work's GPU cost
    (:data:`OFFLOAD_RANGE`); none when no change assumes anything."""
    out = []
    for k in range(2):
        varied = []
        for c in changes:
            if c.kind == "graphs":
                gap = gpu_gap(tl) if c.factor < 0 else c.factor
                c = Change("graphs", factor=gap * GRAPH_GAP_RANGE[k])
            elif c.kind == "offload":
                c = Change("offload", factor=OFFLOAD_RANGE[k])
            varied.append(c)
        if varied != list(changes):
            out.append(varied)
    return out


def _ratio(a: Outcome, b: Outcome) -> float:
    """How much faster ``b`` runs the same work than ``a``."""
    return a.step_ns / b.step_ns if b.step_ns > 0 else float("inf")


def recommendations(
    tl: Timeline, shares: dict[str, float], top_kernel: str | None = None
) -> list[Prediction]:
    """The usual fix of each cause holding at least :data:`MIN_SHARE` of the window
    (``shares``: cause label to share), and a 2× faster top kernel, replayed and ranked
    by predicted speedup, largest first."""
    base, before = replay(tl), measured(tl)
    out = []

    def add(fix: str, change: Change) -> None:
        out.append(predict(tl, [change], fix, base=base, before=before))

    if shares.get("H:CTRL", 0) >= MIN_SHARE:
        add("use CUDA graphs", Change("graphs", factor=-1.0))
    if shares.get("H:APP", 0) >= MIN_SHARE:
        add("move the host work to the GPU", Change("offload", factor=OFFLOAD_COST))
    input_share = _input_share(tl)
    if input_share >= MIN_SHARE:
        add("a DataLoader that keeps up", Change("loader"))
    if shares.get("OFF_CPU", 0) - input_share >= MIN_SHARE:
        add("remove the blocking waits", Change("cause", "OFF_CPU", 0.0))
    if shares.get("H:IO", 0) >= MIN_SHARE:
        add("prefetch or cache the data (no I/O waits)", Change("cause", "H:IO", 0.0))
    if shares.get("H:WAIT_GPU", 0) >= MIN_SHARE or _syncs_per_step(tl) >= 1:
        add("remove the synchronising calls", Change("sync"))
    if top_kernel:
        label = shorten(demangle(top_kernel), 40)
        add(f"the top kernel 2× faster ({label})", kernel_change(top_kernel))
    out.sort(key=lambda p: -p.speedup)
    return out


def kernel_change(name: str, factor: float = KERNEL_SPEEDUP) -> Change:
    """``kernel:NAME=FACTOR`` with the name's glob characters escaped."""
    escaped = "".join(f"[{ch}]" if ch in "*?[]" else ch for ch in name)
    return Change("kernel", escaped, factor)


def top_kernel(tl: Timeline) -> str | None:
    """The name of the kernel that ran longest in the timeline."""
    kernel = (tl.kind == OP_KERNEL) & (tl.label >= 0)
    if not kernel.any():
        return None
    labels, which = np.unique(tl.label[kernel], return_inverse=True)
    busy = np.bincount(which, weights=(tl.end - tl.start)[kernel])
    return tl.names.get(int(labels[np.argmax(busy)]))


def _input_share(tl: Timeline) -> float:
    """The share of the window the thread spent waiting for a DataLoader."""
    d = tl.seg_end - tl.seg_start
    return float(d[tl.seg_input].sum() / max(tl.t1 - tl.t0, 1))


def _syncs_per_step(tl: Timeline) -> float:
    """The thread's waits for the GPU per step (0 without steps)."""
    if tl.steps is None or not tl.steps.count:
        return 0.0
    return len(sync_starts(tl)) / tl.steps.count


SHOWN = 5
"""Recommendations the report shows at most."""
MIN_GAIN = 1.05
"""A recommendation predicted to buy less than this is left out of the verdict."""


def section(
    tl: Timeline,
    off_s: dict[str, float],
    window_s: float,
    top_kernel: str | None,
    asked: Sequence[Change] = (),
    gar: float | None = None,
) -> dict[str, Any]:
    """The report's ``what_if`` key: the steps found, the model's error on the unchanged
    replay, the usual fixes ranked by predicted gain (``off_s``: seconds per off-GPU
    cause over ``window_s``) and what ``asked`` buys."""
    base, before = replay(tl), measured(tl)
    shares = {k: v / window_s for k, v in off_s.items()} if window_s > 0 else {}
    ranked = [p for p in recommendations(tl, shares, top_kernel) if p.speedup >= MIN_GAIN]
    if gar is not None:  # the report's own GAR, over its whole window
        ranked = [replace(p, gar_before=gar) for p in ranked]
    steps = None
    if tl.window_steps is not None and tl.steps is not None:
        count, step_ns = tl.window_steps
        steps = {
            "count": count,
            "ops_per_step": tl.steps.period,
            "step_s": round(step_ns / 1e9, 6),
            "steps_per_s": round(1e9 / step_ns, 3),
            "source": "kernels" if tl.step_range is None else "nvtx",
            **({} if tl.step_range is None else {"range": tl.step_range}),
        }
    return {
        "steps": steps,
        "replayed_s": round((tl.t1 - tl.t0) / 1e9, 3),
        "model_error": round(_ratio(before, base) - 1.0, 3),
        "recommendations": [p.as_json() for p in ranked[:SHOWN]],
        "asked": [
            replace(
                predict(tl, [c], base=base, before=before), gar_before=gar or before.gar
            ).as_json()
            for c in asked
        ],
    }


def ranked(
    records: Records,
    t0: int,
    t1: int,
    device: int,
    entry: dict[str, Any],
    names: Mapping[int, str],
    stacks: Mapping[int, Sequence[str]],
) -> list[Prediction]:
    """The recommendations a verdict over ``[t0, t1)`` shows (``entry``: its breakdown,
    :func:`gtop.analysis.report.gpu_report.unit_summary`): those predicted to buy at least
    :data:`MIN_GAIN`, largest first, with GAR before as the breakdown's."""
    tl = build_timeline(records, t0, t1, names, stacks, device)
    if tl is None or not entry.get("duration_s"):
        return []
    shares = {k: v / entry["duration_s"] for k, v in entry["off"].items()}
    out = [p for p in recommendations(tl, shares, top_kernel(tl)) if p.speedup >= MIN_GAIN]
    return [replace(p, gar_before=entry["gar"]) for p in out[:SHOWN]]
