"""NVML: GPU and per-process GPU samples.

Every NVML call goes through :func:`query`, which initialises NVML lazily under a lock,
turns "not supported" into :data:`UNSUPPORTED`, and remembers each unsupported function
once, so a missing metric costs one failed call, not one per poll.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from gtop.collectors.base import PollingCollector
from gtop.core import layouts
from gtop.core.hub import Entity, Hub

try:
    import pynvml
except ImportError:  # pragma: no cover - nvidia-ml-py is a dependency
    pynvml = None


class NvmlUnavailable(RuntimeError):
    """NVML cannot start here; the message says why in one line."""


class _Unsupported:
    def __repr__(self) -> str:
        return "UNSUPPORTED"


UNSUPPORTED = _Unsupported()
"""Returned by :func:`query` for a function this GPU or driver does not support."""

_lock = threading.Lock()
_initialised = False
_unsupported: set[tuple[str, int]] = set()


def init() -> None:
    """Start NVML once.

    Raises:
        NvmlUnavailable: no driver, no GPU, or no permission (one-line reason).
    """
    global _initialised
    with _lock:
        if _initialised:
            return
        if pynvml is None:
            raise NvmlUnavailable("nvidia-ml-py is not installed")
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlUnavailable(_init_hint(exc)) from exc
        _initialised = True


def _init_hint(exc: Exception) -> str:
    code = getattr(exc, "value", None)
    if code == getattr(pynvml, "NVML_ERROR_LIBRARY_NOT_FOUND", -1):
        return "no NVIDIA driver found (libnvidia-ml.so is missing)"
    if code == getattr(pynvml, "NVML_ERROR_DRIVER_NOT_LOADED", -1):
        return "the NVIDIA driver is not loaded"
    if code == getattr(pynvml, "NVML_ERROR_NO_PERMISSION", -1):
        return "no permission to use NVML (/dev/nvidia* access)"
    return f"NVML failed to start: {exc}"


def query(fn: Callable[..., Any], handle: Any, *args: Any, index: int = -1) -> Any:
    """Call an NVML function; UNSUPPORTED when the GPU or driver lacks it.

    Other NVML errors propagate (the collector counts them). ``NotFound`` (e.g. no
    per-process samples yet) returns None: that is "no data", not an error.
    """
    key = (fn.__name__, index)
    if key in _unsupported:
        return UNSUPPORTED
    try:
        return fn(handle, *args)
    except pynvml.NVMLError_NotSupported:
        _unsupported.add(key)
        return UNSUPPORTED
    except pynvml.NVMLError_FunctionNotFound:
        _unsupported.add(key)
        return UNSUPPORTED
    except pynvml.NVMLError_NotFound:
        return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def device_count() -> int:
    init()
    return pynvml.nvmlDeviceGetCount()


def system_info() -> dict[str, Any]:
    """Driver and CUDA versions."""
    init()
    cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
    return {
        "driver_version": _text(pynvml.nvmlSystemGetDriverVersion()),
        "cuda_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
    }


def describe_device(index: int, handle: Any) -> dict[str, Any]:
    """Static facts about one GPU (an entity of kind "device")."""
    info: dict[str, Any] = {"index": index, "name": _text(pynvml.nvmlDeviceGetName(handle))}
    info["uuid"] = _text(pynvml.nvmlDeviceGetUUID(handle))
    pci = query(pynvml.nvmlDeviceGetPciInfo, handle, index=index)
    info["pci_bus_id"] = _text(pci.busId) if pci not in (None, UNSUPPORTED) else None
    info["mem_total"] = int(memory_info(handle).total)
    attrs = query(pynvml.nvmlDeviceGetAttributes, handle, index=index)
    info["sm_count"] = int(attrs.multiprocessorCount) if attrs not in (None, UNSUPPORTED) else None
    cc = query(pynvml.nvmlDeviceGetCudaComputeCapability, handle, index=index)
    info["compute_capability"] = f"{cc[0]}.{cc[1]}" if cc not in (None, UNSUPPORTED) else None
    gpm = query(pynvml.nvmlGpmQueryDeviceSupport, handle, index=index)
    info["gpm"] = bool(gpm not in (None, UNSUPPORTED) and gpm.isSupportedDevice)
    return info


def memory_info(handle: Any) -> Any:
    """Memory info as nvidia-smi reports it (v2: "used" excludes driver-reserved memory)."""
    version = getattr(pynvml, "nvmlMemory_v2", None)
    if version is not None:
        try:
            return pynvml.nvmlDeviceGetMemoryInfo(handle, version=version)
        except (pynvml.NVMLError, TypeError):
            pass
    return pynvml.nvmlDeviceGetMemoryInfo(handle)


class _Gpm:
    """GPM metrics from two consecutive samples of one device."""

    METRICS = {
        "sm_active": pynvml.NVML_GPM_METRIC_SM_UTIL if pynvml else 2,
        "sm_occupancy": pynvml.NVML_GPM_METRIC_SM_OCCUPANCY if pynvml else 3,
        "tensor_active": pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL if pynvml else 5,
    }

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.samples = [pynvml.nvmlGpmSampleAlloc(), pynvml.nvmlGpmSampleAlloc()]
        pynvml.nvmlGpmSampleGet(handle, self.samples[0])
        self.fresh = 0

    def read(self) -> dict[str, float]:
        newer = 1 - self.fresh
        pynvml.nvmlGpmSampleGet(self.handle, self.samples[newer])
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version = pynvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(self.METRICS)
        request.sample1 = self.samples[self.fresh]
        request.sample2 = self.samples[newer]
        for i, metric in enumerate(self.METRICS.values()):
            request.metrics[i].metricId = metric
        pynvml.nvmlGpmMetricsGet(request)
        self.fresh = newer
        out = {}
        for i, name in enumerate(self.METRICS):
            metric = request.metrics[i]
            if metric.nvmlReturn == pynvml.NVML_SUCCESS:
                out[name] = float(metric.value)
        return out


class NvmlCollector(PollingCollector):
    """Samples every GPU and the processes on it; publishes ``gpu`` and ``proc_gpu``.

    Raises:
        NvmlUnavailable: at construction, when NVML cannot start or sees no GPU.
    """

    name = "nvml"

    def __init__(self, hub: Hub, interval_s: float) -> None:
        super().__init__(hub, interval_s)
        init()
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            raise NvmlUnavailable("NVML found no GPU")
        self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.devices = [describe_device(i, h) for i, h in enumerate(self.handles)]
        self.system = system_info()
        self._gpm: dict[int, _Gpm] = {}
        for dev, handle in zip(self.devices, self.handles):
            if dev["gpm"]:
                try:
                    self._gpm[dev["index"]] = _Gpm(handle)
                except pynvml.NVMLError as exc:
                    self.status.unsupported.append(f"GPM on GPU {dev['index']}: {exc}")
        self._last_seen = [0] * count
        self.pids: frozenset[int] = frozenset()
        """Processes seen on any GPU at the last poll."""
        self._nvlink_prev: dict[int, tuple[int, float, float]] = {}
        now = time.monotonic_ns()
        for dev in self.devices:
            hub.publish_entity(Entity("device", str(dev["index"]), now, {**dev, **self.system}))

    def poll(self) -> None:
        t = time.monotonic_ns()
        gpu = layouts.GPU.empty(len(self.handles))
        procs: list[np.ndarray] = []
        for i, handle in enumerate(self.handles):
            gpu[i]["t_ns"] = t
            gpu[i]["gpu"] = i
            self._sample_device(i, handle, gpu[i], t)
            procs.append(self._sample_processes(i, handle, t))
        self.hub.publish("gpu", gpu)
        rows = np.concatenate(procs)
        self.pids = frozenset(int(p) for p in rows["pid"])
        if len(rows):
            self.hub.publish("proc_gpu", rows)

    def _sample_device(self, i: int, handle: Any, row: np.void, t: int) -> None:
        util = query(pynvml.nvmlDeviceGetUtilizationRates, handle, index=i)
        if util not in (None, UNSUPPORTED):
            row["util_gpu"], row["util_mem"] = util.gpu, util.memory
        mem = memory_info(handle)
        row["mem_used"], row["mem_total"] = mem.used, mem.total
        self._put(row, "power_w", query(pynvml.nvmlDeviceGetPowerUsage, handle, index=i), 1e-3)
        limit = query(pynvml.nvmlDeviceGetEnforcedPowerLimit, handle, index=i)
        self._put(row, "power_limit_w", limit, 1e-3)
        temp = query(pynvml.nvmlDeviceGetTemperature, handle, pynvml.NVML_TEMPERATURE_GPU, index=i)
        self._put(row, "temp_c", temp)
        self._put(row, "fan_pct", query(pynvml.nvmlDeviceGetFanSpeed, handle, index=i))
        for field, clock in (
            ("clock_sm_mhz", pynvml.NVML_CLOCK_SM),
            ("clock_mem_mhz", pynvml.NVML_CLOCK_MEM),
        ):
            self._put(row, field, query(pynvml.nvmlDeviceGetClockInfo, handle, clock, index=i))
        for field, counter in (
            ("pcie_tx_bps", pynvml.NVML_PCIE_UTIL_TX_BYTES),
            ("pcie_rx_bps", pynvml.NVML_PCIE_UTIL_RX_BYTES),
        ):
            kib = query(pynvml.nvmlDeviceGetPcieThroughput, handle, counter, index=i)
            self._put(row, field, kib, 1024.0)
        reasons = query(pynvml.nvmlDeviceGetCurrentClocksEventReasons, handle, index=i)
        if reasons not in (None, UNSUPPORTED):
            row["throttle"] = int(reasons)
        for field, kind in (
            ("ecc_corrected", pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
            ("ecc_uncorrected", pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        ):
            count = query(
                pynvml.nvmlDeviceGetTotalEccErrors, handle, kind, pynvml.NVML_VOLATILE_ECC, index=i
            )
            if count not in (None, UNSUPPORTED):
                row[field] = int(count)
        self._sample_nvlink(i, handle, row, t)
        gpm = self._gpm.get(i)
        if gpm is not None:
            for field, value in gpm.read().items():
                row[field] = value

    @staticmethod
    def _put(row: np.void, field: str, value: Any, scale: float = 1.0) -> None:
        if value not in (None, UNSUPPORTED):
            row[field] = float(value) * scale

    def _sample_nvlink(self, i: int, handle: Any, row: np.void, t: int) -> None:
        """NVLink throughput from the cumulative KiB counters (a rate needs two reads)."""
        ids = [
            pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
            pynvml.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX,
        ]
        values = query(pynvml.nvmlDeviceGetFieldValues, handle, ids, index=i)
        if values in (None, UNSUPPORTED):
            return
        if any(v.nvmlReturn != pynvml.NVML_SUCCESS for v in values):
            return
        tx, rx = (float(v.value.ullVal) * 1024.0 for v in values)
        prev = self._nvlink_prev.get(i)
        self._nvlink_prev[i] = (t, tx, rx)
        if prev is not None and t > prev[0]:
            dt = (t - prev[0]) / 1e9
            row["nvlink_tx_bps"] = (tx - prev[1]) / dt
            row["nvlink_rx_bps"] = (rx - prev[2]) / dt

    def _sample_processes(self, i: int, handle: Any, t: int) -> np.ndarray:
        running = {}
        for fn in (
            pynvml.nvmlDeviceGetComputeRunningProcesses,
            pynvml.nvmlDeviceGetGraphicsRunningProcesses,
        ):
            found = query(fn, handle, index=i)
            if found in (None, UNSUPPORTED):
                continue
            for proc in found:
                used = proc.usedGpuMemory
                mem = int(used) if used is not None else -1
                running[int(proc.pid)] = max(running.get(int(proc.pid), -1), mem)
        utils = self._process_utilization(i, handle)
        pids = sorted(set(running) | set(utils))
        rows = layouts.PROC_GPU.empty(len(pids))
        for row, pid in zip(rows, pids):
            row["t_ns"], row["pid"], row["gpu"] = t, pid, i
            row["gpu_mem"] = running.get(pid, -1)
            if pid in utils:
                row["sm_util"], row["mem_util"], row["enc_util"], row["dec_util"] = utils[pid]
        return rows

    def _process_utilization(self, i: int, handle: Any) -> dict[int, tuple[float, ...]]:
        """Latest sample per pid since the last call.

        The last-seen timestamp is carried forward; without it NVML returns its whole
        sample buffer and per-process sums can exceed 100% (nvtop's known bug).
        """
        try:
            samples = query(
                pynvml.nvmlDeviceGetProcessUtilization, handle, self._last_seen[i], index=i
            )
        except pynvml.NVMLError as exc:
            if getattr(exc, "value", None) == pynvml.NVML_SUCCESS:
                return {}  # pynvml raises "Success" when there are zero samples
            raise
        if samples in (None, UNSUPPORTED):
            return {}
        latest: dict[int, Any] = {}
        for s in samples:
            if s.timeStamp > self._last_seen[i] and (
                s.pid not in latest or s.timeStamp > latest[s.pid].timeStamp
            ):
                latest[s.pid] = s
        if latest:
            self._last_seen[i] = max(s.timeStamp for s in latest.values())
        return {
            pid: (float(s.smUtil), float(s.memUtil), float(s.encUtil), float(s.decUtil))
            for pid, s in latest.items()
        }
