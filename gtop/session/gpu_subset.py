"""``--gpus 0,1``: any source, seen through a filter that keeps only some GPUs.

Rows of streams that name a GPU (``gpu`` or ``device`` field: NVML samples, per-process
GPU rows, kernels, copies) on other GPUs are dropped before the model sees them, and so
are those GPUs' ``device`` entities. Host rows (threads, CPU) pass untouched: they belong
to processes, not GPUs. Everything else (controls, replay keys) is the source's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gtop.core.hub import Update

GPU_FIELDS = ("gpu", "device")


def keep_gpus(update: Update, gpus: frozenset[int]) -> Update:
    """``update`` without the rows and ``device`` entities of GPUs outside ``gpus``."""
    batches = {}
    for name, rows in update.batches.items():
        field = next((f for f in GPU_FIELDS if f in (rows.dtype.names or ())), None)
        if field is not None:
            rows = rows[np.isin(rows[field], np.fromiter(gpus, np.int64))]
        if len(rows):
            batches[name] = rows
    entities = [
        e for e in update.entities if e.kind != "device" or int(e.value.get("index", -1)) in gpus
    ]
    return Update(batches=batches, entities=entities, reset=update.reset)


class GpuSubset:
    """``source`` with only ``gpus`` visible (see the module docstring)."""

    def __init__(self, source: Any, gpus: frozenset[int]) -> None:
        self._source = source
        self.gpus = gpus

    def poll(self) -> Update:
        return keep_gpus(self._source.poll(), self.gpus)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)
