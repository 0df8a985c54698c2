"""The model as Prometheus/OpenMetrics families (``gtop serve``).

GPU gauges carry dcgm-exporter's names, units and labels where the two overlap
(``DCGM_FI_DEV_GPU_UTIL`` in %, ``DCGM_FI_DEV_FB_USED`` in MiB, ``DCGM_FI_PROF_*``
activity as a 0-1 ratio, labels ``gpu``, ``UUID``, ``modelName``, ``Hostname``), so
dashboards built for it read gtop's endpoint unchanged. What only gtop knows has a
``gtop_`` prefix: per-process GPU Active Ratio and off-GPU seconds by cause over a
sliding window (from CUPTI data; under kernel sampling the ratio estimates the untraced
and off-GPU seconds estimate the untraced time from the traced time around it, with the
untraced seconds beside them), kernels per process, and rows dropped anywhere.
A missing value (NaN, -1) is left out, never exported as zero.
"""

from __future__ import annotations

import math
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gtop.analysis import intervals as iv
from gtop.analysis.attribution import untraced
from gtop.analysis.attribution.causes import LABELS, OFF_CAUSES, Cause
from gtop.analysis.attribution.sliding_window import AttributionEngine
from gtop.core import layouts
from gtop.core.model import Model
from gtop.views.tabs.session_data import ENGINE_STREAMS

MIB = 1 << 20
WINDOW_NS = 10_000_000_000
"""The window that GAR and off-GPU seconds cover."""
LAG_NS = 1_500_000_000
"""How long before the newest record that window ends: CUPTI delivers records late, and
host-thread records wait 0.3 s for their Python stacks (Austin; 0.6 s under py-spy
dump: ``PyStackSampler.pending_ns``)."""

DCGM_GAUGES: tuple[tuple[str, str, float, str], ...] = (
    # (dcgm-exporter name, gpu-stream field, scale, help)
    ("DCGM_FI_DEV_GPU_UTIL", "util_gpu", 1.0, "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "util_mem", 1.0, "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "mem_used", 1 / MIB, "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "power_w", 1.0, "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_TEMP", "temp_c", 1.0, "GPU temperature (in C)."),
    ("DCGM_FI_DEV_SM_CLOCK", "clock_sm_mhz", 1.0, "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "clock_mem_mhz", 1.0, "Memory clock frequency (in MHz)."),
    ("DCGM_FI_PROF_SM_ACTIVE", "sm_active", 0.01, "Ratio of cycles an SM has a warp."),
    ("DCGM_FI_PROF_SM_OCCUPANCY", "sm_occupancy", 0.01, "Ratio of warps resident to max."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor_active", 0.01, "Ratio of tensor pipe active."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "pcie_tx_bps", 1.0, "PCIe bytes transmitted per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "pcie_rx_bps", 1.0, "PCIe bytes received per second."),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", "nvlink_tx_bps", 1.0, "NVLink bytes sent per second."),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", "nvlink_rx_bps", 1.0, "NVLink bytes received per second."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "ecc_corrected", 1.0, "Volatile corrected ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "ecc_uncorrected", 1.0, "Volatile uncorrected ECC errors."),
)


def _present(value: Any) -> bool:
    return not (math.isnan(float(value)) if isinstance(value, float | np.floating) else value < 0)


class ModelMetrics:
    """A ``prometheus_client`` collector over a :class:`Model` fed by another thread.

    Args:
        model: read under ``lock`` at every scrape.
        lock: held by the thread that applies updates to ``model``.
        drops: the source's own drop counters (read at every scrape).
    """

    def __init__(
        self, model: Model, lock: threading.Lock, drops: Callable[[], dict[str, int]]
    ) -> None:
        self.model = model
        self.lock = lock
        self.source_drops = drops
        self.hostname = socket.gethostname()
        self.engine = AttributionEngine(WINDOW_NS)
        self.kernels: Counter[int] = Counter()
        """Kernel executions per pid since the endpoint started (or the replay seeked)."""
        self._per_second: dict[int, Counter[int]] = {}
        """Kernels per pid in each second of data time, the last window's worth."""
        model.listeners.append(self._on_batch)
        model.reset_listeners.append(self._on_reset)

    def _on_reset(self) -> None:
        self.engine = AttributionEngine(WINDOW_NS)
        self.kernels.clear()
        self._per_second.clear()

    def _on_batch(self, name: str, batch: np.ndarray) -> None:
        if name in ENGINE_STREAMS and len(batch):
            self.engine.feed({name: batch})
        if name != layouts.KERNEL.name or not len(batch):
            return
        pids, counts = np.unique(batch["pid"], return_counts=True)
        self.kernels.update(dict(zip(pids.tolist(), counts.tolist())))
        seconds = batch["t_ns"] // 1_000_000_000
        for sec in np.unique(seconds).tolist():
            self._per_second.setdefault(sec, Counter()).update(
                batch["pid"][seconds == sec].tolist()
            )
        horizon = max(self._per_second) - WINDOW_NS // 1_000_000_000
        for sec in [s for s in self._per_second if s <= horizon]:
            del self._per_second[sec]

    def describe(self) -> list[Metric]:
        """Nothing up front: families are known only at scrape time (no pre-scrape)."""
        return []

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            yield from self._gpu_families()
            yield from self._process_families()
            yield from self._attribution_families()
            yield self._drops()

    def _gpu_families(self) -> Iterator[Metric]:
        devices = {int(d.get("index", 0)): d for d in self.model.devices()}
        latest = sorted(self.model.latest("gpu", "gpu").items())
        labels = ["gpu", "UUID", "modelName", "Hostname"]
        values = {}
        for index, _ in latest:
            dev = devices.get(index, {})
            values[index] = [str(index), dev.get("uuid") or "", dev.get("name") or ""]
            values[index].append(self.hostname)
        for name, field, scale, doc in DCGM_GAUGES:
            family = GaugeMetricFamily(name, doc, labels=labels)
            for index, row in latest:
                if _present(row[field]):
                    family.add_metric(values[index], float(row[field]) * scale)
            yield family
        free = GaugeMetricFamily(
            "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", labels=labels
        )
        for index, row in latest:
            if _present(row["mem_used"]) and _present(row["mem_total"]):
                free.add_metric(values[index], (int(row["mem_total"]) - int(row["mem_used"])) / MIB)
        yield free

    def _process_families(self) -> Iterator[Metric]:
        mem = GaugeMetricFamily(
            "gtop_process_gpu_memory_bytes", "GPU memory a process holds.", labels=["pid", "gpu"]
        )
        sm = GaugeMetricFamily(
            "gtop_process_sm_util_percent",
            "NVML's per-process SM utilization.",
            labels=["pid", "gpu"],
        )
        rows = self.model.window("proc_gpu", 5.0)
        if rows is not None and len(rows):
            newest: dict[tuple[int, int], np.void] = {}
            for row in rows:
                newest[(int(row["pid"]), int(row["gpu"]))] = row
            for (pid, gpu), row in sorted(newest.items()):
                if _present(row["gpu_mem"]):
                    mem.add_metric([str(pid), str(gpu)], float(row["gpu_mem"]))
                if _present(row["sm_util"]):
                    sm.add_metric([str(pid), str(gpu)], float(row["sm_util"]))
        kernels = CounterMetricFamily(
            "gtop_kernels", "Kernel executions seen (CUPTI) since gtop started.", labels=["pid"]
        )
        rate = GaugeMetricFamily(
            "gtop_kernel_launches_per_second",
            "Kernel executions per second over the attribution window.",
            labels=["pid"],
        )
        window: Counter[int] = Counter()
        for counts in self._per_second.values():
            window.update(counts)
        traced = self._traced_s()
        for pid, count in sorted(self.kernels.items()):
            kernels.add_metric([str(pid)], count)
            seconds = traced.get(pid, WINDOW_NS / 1e9)
            if seconds > 0:
                rate.add_metric([str(pid)], window[pid] / seconds)
        yield from (mem, sm, kernels, rate)

    def _traced_s(self) -> dict[int, float]:
        """Per pid that kernel sampling left untraced in the kernel-rate window: the
        seconds of that window it traced (launches/s are per traced second)."""
        if not self._per_second:
            return {}
        t1 = (max(self._per_second) + 1) * 1_000_000_000
        t0 = t1 - WINDOW_NS
        spans = untraced.spans_by_pid(self.engine.records().untraced, t1)
        return {pid: (WINDOW_NS - iv.clip(s, t0, t1).measure()) / 1e9 for pid, s in spans.items()}

    def _attribution_families(self) -> Iterator[Metric]:
        gar = GaugeMetricFamily(
            "gtop_gpu_active_ratio",
            "GPU Active Ratio of a process on a GPU: time kernels or copies ran / window "
            "(under kernel sampling, the untraced time estimated from the traced time).",
            labels=["pid", "gpu"],
        )
        off = GaugeMetricFamily(
            "gtop_off_gpu_seconds",
            "Seconds of the window the GPU was idle for a process, by the host or device cause "
            "(under kernel sampling, with the untraced seconds given out as GAR estimates them).",
            labels=["pid", "gpu", "cause"],
        )
        unseen = GaugeMetricFamily(
            "gtop_not_traced_seconds",
            "Seconds of the window kernel sampling traced none of a process's CUDA activity "
            "(GAR and the off-GPU seconds estimate them from the traced time around).",
            labels=["pid", "gpu"],
        )
        window = GaugeMetricFamily(
            "gtop_attribution_window_seconds",
            "The window GAR and off-GPU seconds cover: the last this many seconds, ending "
            f"{LAG_NS / 1e9:g} s before the newest data (the UI's live 'last 10 s'; a replay's "
            "report window is gtop report's or gtop replay --once --json's).",
        )
        results = self.engine.result("process", lag_ns=LAG_NS) if self.engine.watermark else {}
        for unit, res in sorted(results.items()):
            labels = [str(unit.pid), str(unit.device)]
            gar.add_metric(labels, res.gar)
            for cause in OFF_CAUSES:
                off.add_metric([*labels, LABELS[cause]], float(res.estimated[cause]) / 1e9)
            unseen.add_metric(labels, int(res.totals[Cause.NOT_TRACED]) / 1e9)
        if results:
            window.add_metric([], WINDOW_NS / 1e9)
        yield from (gar, off, unseen, window)

    def _drops(self) -> Metric:
        family = CounterMetricFamily(
            "gtop_dropped_records", "Rows lost before analysis, by stream.", labels=["stream"]
        )
        drops = {**self.source_drops(), **self.model.drops()}
        for stream, count in sorted(drops.items()):
            family.add_metric([stream], count)
        return family
