"""The ``gpu`` section of ``gtop report --json``: per device, the on/off-GPU breakdown
(the report names ``on``, ``off`` and ``panels`` with their unit: ``on_s``, ``off_s``,
``panels_s``; :func:`gtop.analysis.report.document.with_units`).

Shape, keyed by device index as a string::

    {"0": {"exact": true, "duration_s": 60.0, "window_s": 60.0, "traced_s": 60.0,
           "untraced_s": 0.0,
           "gar": 0.71,
           "on": {"G:COMP": 41.2, "G:XFER": 1.4, "G:COMM": 0.0},
           "off": {"H:CTRL": ..., "H:APP": ..., "H:WAIT_GPU": ..., "H:IO": ...,
                   "OFF_CPU": ..., "G:QUEUE": ..., "G:STALL": ..., "UNKNOWN": ...},
           "panels": {"OFF-CPU^dep": ..., "OFF-CPU^queue": ..., "OFF-GPU^dep": ...,
                      "OFF-GPU^queue": ...},
           "inflation": {"cpu": {"qif": ..., "dif": ...}, "gpu": {...}},
           "threads": [tid, ...],
           "top_off_gpu_stacks": [{"stack": "OFF_GPU;H:IO;...", "seconds": 1.2}, ...],
           "after_sync_s": 0.8,
           "sync_stacks": [{"stack": "main (train.py:12);...", "seconds": 0.7}]}}

All times in seconds. ``on`` and ``off`` come from the exact partition and sum to
``duration_s``, the window (``window_s``, the same; ``UNKNOWN`` holds off-GPU time without
host data, so nothing is hidden). Under kernel sampling ``traced_s`` of it was traced and
``untraced_s`` not (:data:`~gtop.analysis.attribution.causes.Cause.NOT_TRACED`): each untraced
span's
seconds are then given out in the cause mix of the traced time just before it
(:func:`~gtop.analysis.attribution.partition.estimated`). ``gar`` and every share are of
``duration_s``; ``gar`` is null when nothing was traced.
``after_sync_s``: host-caused off-GPU time in gaps opened by a synchronisation
(:func:`opened_by_syncs`); ``sync_stacks``: the synchronising calls' stacks (the waits in
them) by that time (:func:`sync_wait_stacks`). Panels are resource-wide waits (the time
some thread or op waited that way, never more than the duration); a panel is null when
it cannot be known (the NVML approximation has no GPU queue or dependency data).
Inflation factors are null when the resource did no work.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gtop.analysis.attribution.causes import LABELS, OFF_CAUSES, ON_CAUSES, Cause
from gtop.analysis.attribution.gpu_flame import fold
from gtop.analysis.attribution.host_window import LAUNCH_GAP_NS
from gtop.analysis.attribution.partition import Partition, Summary, Unit
from gtop.analysis.attribution.range_blocks import BLOCK_NS, blocks
from gtop.analysis.attribution.records import STREAM_WAIT_EVENT, Records
from gtop.core.layouts import BlockReason

NS = 1e-9


def unit_summary(res: Summary) -> dict[str, Any]:
    """One unit's entry (without stacks): seconds per cause, panels, inflation. Under
    kernel sampling the seconds per cause include the untraced time given out by
    :func:`~gtop.analysis.attribution.partition.estimated` (``traced_s`` says how much was seen)."""
    seconds = res.estimated
    return {
        "exact": res.exact,
        "duration_s": res.duration_ns * NS,
        "window_s": res.duration_ns * NS,
        "traced_s": res.traced_ns * NS,
        "untraced_s": int(res.totals[Cause.NOT_TRACED]) * NS,
        "gar": res.gar if res.traced_ns else None,
        "on": {LABELS[c]: float(seconds[c]) * NS for c in ON_CAUSES},
        "off": {LABELS[c]: float(seconds[c]) * NS for c in OFF_CAUSES},
        "panels": {k: None if v < 0 else v * NS for k, v in res.panels.items()},
        "inflation": {
            r: {k: None if math.isnan(v) else v for k, v in f.items()}
            for r, f in res.inflation().items()
        },
        "threads": list(res.threads),
    }


AFTER_SYNC_NS = 50_000
"""An off-GPU gap that starts this close after a synchronisation ends was opened by it."""
HOST = np.array(
    [c for c in OFF_CAUSES if LABELS[c].startswith("H:") or LABELS[c] == "OFF_CPU"], np.uint8
)
"""Causes that are the host's: the H:* causes and OFF_CPU."""


def opened_by_syncs(partition: Partition, syncs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The off-GPU gaps that open as a synchronisation (CUPTI SYNCHRONIZATION record:
    stream, event or context synchronise) ends, within :data:`AFTER_SYNC_NS`: per gap,
    that synchronisation's end and the host-caused (:data:`HOST`) ns in the gap (the host
    waited for the GPU to drain, then left it idle while it did this work)."""
    none = np.empty(0, np.int64)
    syncs = syncs[syncs["type"] != STREAM_WAIT_EVENT]
    if not len(partition) or not len(syncs):
        return none, none
    starts, ends = partition.starts, partition.ends
    off = ~np.isin(partition.causes, ON_CAUSES)
    joined = np.concatenate(([False], ~off[:-1] | (starts[1:] != ends[:-1])))
    first = off & (joined | (np.arange(len(off)) == 0))
    if not first.any():  # no off-GPU gap (one kernel ending at the end of time, say)
        return none, none
    gap = np.cumsum(first) - 1  # the gap each segment belongs to (meaningful where off)
    opens = starts[first]
    done = np.sort(syncs["end"])
    i = np.searchsorted(done, opens)
    before, after = done[np.maximum(i - 1, 0)], done[np.minimum(i, len(done) - 1)]
    nearest = np.where(np.abs(opens - before) <= np.abs(after - opens), before, after)
    by_sync = np.abs(opens - nearest) <= AFTER_SYNC_NS
    mine = off & np.isin(partition.causes, HOST) & by_sync[np.maximum(gap, 0)]
    host = np.bincount(gap[mine], weights=ends[mine] - starts[mine], minlength=len(opens))
    keep = by_sync & (host > 0)
    return nearest[keep], host[keep].astype(np.int64)


SYNC_WAIT_NS = 200_000
"""A thread's wait in a synchronising call (a state row with reason GPU_WAIT) ends at most
this far from the synchronisation's end CUPTI recorded."""


def sync_wait_stacks(states: np.ndarray, sync_ends: np.ndarray, host_ns: np.ndarray) -> Counter:
    """Host-caused idle ns per stack id of the synchronising call that opened each gap
    (:func:`opened_by_syncs`): the stack of the wait (reason GPU_WAIT, marked by the host
    tier's uprobes) that ends nearest the synchronisation's end: where in the program
    the ``.item()`` or ``synchronize()`` is."""
    waits = states[(states["reason"] == BlockReason.GPU_WAIT) & (states["stack_id"] >= 0)]
    if not len(waits) or not len(sync_ends):
        return Counter()
    order = np.argsort(waits["end"], kind="stable")
    wait_ends, wait_stacks = waits["end"][order], waits["stack_id"][order]
    j = np.searchsorted(wait_ends, sync_ends)
    lo, hi = np.maximum(j - 1, 0), np.minimum(j, len(wait_ends) - 1)
    best = np.where(np.abs(wait_ends[lo] - sync_ends) <= np.abs(wait_ends[hi] - sync_ends), lo, hi)
    near = np.abs(wait_ends[best] - sync_ends) <= SYNC_WAIT_NS
    ids, inverse = np.unique(wait_stacks[best[near]], return_inverse=True)
    sums = np.bincount(inverse, weights=host_ns[near], minlength=len(ids)).astype(np.int64)
    return Counter(dict(zip(ids.tolist(), sums.tolist(), strict=True)))


def after_syncs(partition: Partition, syncs: np.ndarray, states: np.ndarray) -> tuple[int, Counter]:
    """Host-caused idle ns in gaps a synchronisation opened, and those ns per stack id of
    the synchronising call (:func:`opened_by_syncs`, :func:`sync_wait_stacks`): what the
    report adds up block by block and the verdict line takes over its window."""
    sync_ends, host_ns = opened_by_syncs(partition, syncs)
    return int(host_ns.sum()), sync_wait_stacks(states, sync_ends, host_ns)


SYNC_STACKS = 3


def top_sync_stacks(
    weights: Mapping[int, int], stacks: Mapping[int, Sequence[str]] | None, top: int = SYNC_STACKS
) -> list[dict[str, Any]]:
    """The ``top`` stacks of synchronising calls by the idle time after them
    (:func:`sync_wait_stacks`), frames outermost first joined by ``;`` (ties by name)."""
    folded: Counter[str] = Counter()
    for stack_id, ns in weights.items():
        frames = (stacks or {}).get(stack_id)
        if frames:
            folded[";".join(frames)] += ns
    ranked = sorted((-ns, s) for s, ns in folded.items())[:top]
    return [{"stack": s, "seconds": -ns * NS} for ns, s in ranked]


def top_off_stacks(folded: Mapping[str, int], top: int) -> list[dict[str, Any]]:
    """The ``top`` widest OFF_GPU stacks (ties by name)."""
    off = sorted(((-w, s) for s, w in folded.items() if s.startswith("OFF_GPU;")))[:top]
    return [{"stack": s, "seconds": -w * NS} for w, s in off]


def gpu_report(
    records: Records,
    t0: int,
    t1: int,
    kernel_names: Mapping[int, str] | None = None,
    stacks: Mapping[int, Sequence[str]] | None = None,
    slice_ns: int = 1_000_000,
    top: int = 10,
    block_ns: int = BLOCK_NS,
    launch_gap_ns: int = LAUNCH_GAP_NS,
) -> dict[str, dict[str, Any]]:
    """The ``gpu`` report section over ``[t0, t1)`` (see the module docstring), computed
    block by block (:mod:`gtop.analysis.attribution.range_blocks`).

    Raises:
        ValueError: ``block_ns`` is not a multiple of ``slice_ns``.
    """
    if block_ns % slice_ns:
        raise ValueError("block_ns must be a multiple of slice_ns")
    sums: dict[Unit, Summary] = {}
    folded: dict[Unit, Counter[str]] = {}
    after_sync: Counter[Unit] = Counter()
    sync_stacks: dict[Unit, Counter[int]] = {}
    for result, rows in blocks(records, t0, t1, "device", block_ns, launch_gap_ns=launch_gap_ns):
        for unit, res in result.items():
            sums[unit] = sums[unit].plus(res) if unit in sums else res.summary()
            host_ns, waits = after_syncs(res.partition, rows.syncs, rows.states)
            after_sync[unit] += host_ns
            sync_stacks.setdefault(unit, Counter()).update(waits)
            folded.setdefault(unit, Counter()).update(
                fold(res, rows, kernel_names, stacks, slice_ns, on_gpu_leaves=False)
            )
    out = {}
    for unit in sorted(sums):
        entry = unit_summary(sums[unit])
        entry["top_off_gpu_stacks"] = top_off_stacks(folded[unit], top)
        entry["after_sync_s"] = after_sync[unit] * NS
        entry["sync_stacks"] = top_sync_stacks(sync_stacks[unit], stacks)
        out[str(unit.device)] = entry
    return out
