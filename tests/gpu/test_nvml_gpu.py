"""NVML collection for real (GPU machine: pytest -m gpu)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_nvml_collector_samples_every_gpu() -> None:
    from gtop.collectors.nvml import NvmlCollector
    from gtop.core.hub import Hub

    hub = Hub()
    sub = hub.subscribe()
    collector = NvmlCollector(hub, 0.1)
    collector.poll()
    update = sub.poll()
    gpu = update.batches["gpu"]
    assert len(gpu) == len(collector.handles) >= 1
    assert np.all(gpu["mem_total"] > 0) and np.all(gpu["mem_used"] >= 0)
    assert np.all(np.isfinite(gpu["util_gpu"])) and np.all(np.isfinite(gpu["power_w"]))
    devices = [e.value for e in update.entities if e.kind == "device"]
    assert devices and all(d["name"].startswith("NVIDIA") for d in devices)
    assert collector.status.error_count == 0, collector.status.last_error
