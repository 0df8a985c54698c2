"""The CSV export: every row, units in column names, enum names, and entity tables that
resolve every id a stream row holds."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

from gtop.analysis.kernels.cuda_activity import api_name
from gtop.recordings.reader import Recording
from tests.exporters.conftest import SLOW_LOADER


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_every_stream_row_with_units_and_enum_names(export: Callable[..., Path]) -> None:
    out = export("csv")
    with Recording(SLOW_LOADER) as rec:
        for name in rec.streams:
            assert len(_rows(out / f"{name}.csv")) == sum(c.n for c in rec.chunks(name))
        api = rec.read("api")
    gpu = _rows(out / "gpu.csv")[0]
    assert {"util_gpu_pct", "mem_used_B", "power_w", "t_ns"} <= gpu.keys()
    assert "mem_used" not in gpu
    states = {r["state"] for r in _rows(out / "thread_state.csv")}
    assert states == {"ON_CPU", "RUNNABLE", "BLOCKED"}
    calls = _rows(out / "api.csv")
    assert {r["domain"] for r in calls} == {"runtime", "driver"}
    assert calls[0]["function"] == api_name(int(api["domain"][0]), int(api["cbid"][0]))
    assert {r["copy_kind"] for r in _rows(out / "memcpy.csv")} <= {"HTOD", "DTOH", "DTOD"}


def test_entity_tables_resolve_ids(export: Callable[..., Path]) -> None:
    out = export("csv")
    kernels = _rows(out / "kernel.csv")
    names = {r["key"]: r["name"] for r in _rows(out / "entity_kernel_name.csv")}
    assert all(r["name_id"] in names for r in kernels)
    assert all(r["kernel"] and not r["kernel"].startswith("_Z") for r in kernels)
    stacks = {r["key"]: r for r in _rows(out / "entity_stack.csv")}
    used = {r["stack_id"] for r in _rows(out / "thread_state.csv")} - {"-1"}
    assert used and used <= stacks.keys()
    assert ";" in next(iter(stacks.values()))["frames"]
    threads = {r["key"]: r for r in _rows(out / "entity_thread.csv")}
    assert {r["tid"] for r in _rows(out / "thread_state.csv")} <= threads.keys()
    processes = _rows(out / "entity_process.csv")
    assert any("slow_loader_train.py" in p["cmdline"] for p in processes)


def test_the_window_covered_is_a_table_too(export: Callable[..., Path]) -> None:
    (window,) = _rows(export("csv") / "window.csv")
    with Recording(SLOW_LOADER) as rec:
        t0, t1 = rec.time_range()
    assert window["kind"] == "recording" and float(window["from_s"]) == 0.0
    assert float(window["duration_s"]) == round((t1 + 1 - t0) / 1e9, 3)
    assert window["label"].startswith("whole recording 0.00–")
