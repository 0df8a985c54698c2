"""On-/off-GPU attribution without CUPTI: NVML utilisation plus host thread states.

Used when the in-process agent is missing. The result is a
:class:`~gtop.analysis.attribution.partition.UnitResult` with ``exact=False``; views and reports
must label it as an approximation. How it is made, per NVML sample period
``(previous sample, sample]`` clipped to the window:

* ON_GPU = ``util_gpu`` % of the period, all of it ``G:COMP`` (NVML cannot tell copies
  from kernels, nor where in the period the GPU was busy);
* the rest is split over host causes in proportion to what the given thread did during
  the period (rule 3 of :mod:`gtop.analysis.attribution.partition`), where on-CPU time is split
  into ``H:CTRL`` and ``H:APP`` by the share of the thread's stack samples in the window
  that show a CUDA frame; periods without host data, a window edge not covered by any
  sample, and samples without a value, are ``UNKNOWN``;
* ``G:QUEUE``/``G:STALL`` are never produced; the GPU panels are -1 ("no value").

The partition lists, within each period, the on-GPU part first and then the host causes
in :class:`~gtop.analysis.attribution.causes.Cause` order: the order is made up, the sums are not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import slices
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.host_window import HostIndex
from gtop.analysis.attribution.partition import Partition, Unit, UnitResult
from gtop.analysis.attribution.records import Records
from gtop.core.streams import NO_INT

CUDA_FRAME = re.compile(r"(^|[^A-Za-z0-9_])(cu|cuda)[A-Z]\w*|libcuda")
"""A frame inside the CUDA runtime or driver (``cudaLaunchKernel``, ``libcuda.so``)."""


def ctrl_share(host: HostIndex, tid: int, stacks: Mapping[int, Sequence[str]]) -> float:
    """Share of the thread's stack samples that show a CUDA frame (0 without samples)."""
    ids = host.thread_samples(tid)["stack_id"]
    if not len(ids):
        return 0.0
    distinct, inverse = iv.dense_index(ids.astype(np.int64))
    cuda = np.array(
        [any(CUDA_FRAME.search(f) for f in stacks.get(int(s), ())) for s in distinct], bool
    )
    return float(cuda[inverse].mean())


def approximate(
    gpu: np.ndarray,
    records: Records,
    device: int,
    tid: int,
    t0: int,
    t1: int,
    stacks: Mapping[int, Sequence[str]] | None = None,
) -> UnitResult:
    """Approximate attribution of ``device`` over ``[t0, t1)``, charging thread ``tid``.

    ``gpu``: NVML samples (layout ``gpu``); ``records``: host rows (states, samples).

    Raises:
        ValueError: an empty window.
    """
    if t1 <= t0:
        raise ValueError("empty window")
    samples = gpu[gpu["gpu"] == device]
    samples = samples[np.argsort(samples["t_ns"], kind="stable")]
    t = samples["t_ns"]
    util = samples["util_gpu"][1:].astype(np.float64)
    lo, hi = np.maximum(t[:-1], t0), np.minimum(t[1:], t1)
    keep = hi > lo
    lo, hi, util = lo[keep], hi[keep], util[keep]
    covered = iv.Spans(lo, hi)  # sorted and disjoint (touching), as sample times are

    host = HostIndex(records, t0, t1)
    hs, he, hc, _ = host.host_causes(tid, iv.Spans(np.array([t0]), np.array([t1])))
    thread = Partition(hs, he, hc, *(np.full(len(hs), -1, d) for d in ("i4", "i2", "i8")))
    share = np.zeros((len(lo), len(Cause)))
    if len(lo):
        edges = iv.unique_sorted(np.concatenate((lo, hi)))
        rows = np.searchsorted(edges, lo)
        occ = slices.occupancy(thread, edges)[rows].astype(np.float64)
        c = ctrl_share(host, tid, stacks or {})
        occ[:, Cause.H_CTRL] += c * occ[:, Cause.H_APP]
        occ[:, Cause.H_APP] *= 1 - c
        known = occ.sum(axis=1) - occ[:, Cause.UNKNOWN]
        off = 1 - np.clip(util, 0, 100) / 100
        host_frac = np.divide(occ, known[:, None], out=np.zeros_like(occ), where=known[:, None] > 0)
        host_frac[:, Cause.UNKNOWN] = np.where(known > 0, 0.0, 1.0)
        share = host_frac * off[:, None]
        share[:, Cause.G_COMP] = 1 - off
        nan = np.isnan(util)
        share[nan] = 0
        share[nan, Cause.UNKNOWN] = 1

    # Whole nanoseconds per period, rounded on the running sum so each period adds up.
    length = (hi - lo).astype(np.float64)
    bounds = lo[:, None] + np.rint(np.cumsum(share, axis=1) * length[:, None]).astype(np.int64)
    bounds[:, -1] = hi
    seg_start = np.concatenate((lo[:, None], bounds[:, :-1]), axis=1).ravel()
    seg_end = bounds.ravel()
    seg_cause = np.tile(np.arange(len(Cause), dtype=np.uint8), len(lo))
    uncovered = iv.complement(covered if len(lo) else iv.EMPTY, t0, t1)
    starts = np.concatenate((seg_start, uncovered.starts))
    ends = np.concatenate((seg_end, uncovered.ends))
    causes = np.concatenate((seg_cause, np.full(len(uncovered), Cause.UNKNOWN, np.uint8)))
    nonempty = ends > starts
    order = np.argsort(starts[nonempty], kind="stable")
    starts, ends, causes = starts[nonempty][order], ends[nonempty][order], causes[nonempty][order]
    n = len(starts)
    part = Partition(
        starts,
        ends,
        causes,
        np.where(causes >= Cause.H_CTRL, tid, -1).astype(np.int32),
        np.full(n, -1, np.int16),
        np.full(n, -1, np.int64),
    )
    blocked, runnable, on_cpu = host.thread_panels(np.array([tid]))
    return UnitResult(
        unit=Unit("device", device),
        t0=t0,
        t1=t1,
        totals=part.totals(),
        panels={
            "OFF-CPU^dep": blocked,
            "OFF-CPU^queue": runnable,
            "OFF-GPU^dep": NO_INT,
            "OFF-GPU^queue": NO_INT,
        },
        service={"cpu": on_cpu, "gpu": 0},
        threads=(tid,),
        partition=part,
        exact=False,
    )
