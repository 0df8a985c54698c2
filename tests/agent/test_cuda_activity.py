"""Kernel, copy and API summaries over record batches."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from gtop.analysis.kernels.cuda_activity import (
    KernelStats,
    api_summary,
    kernel_summary,
    kernels_report,
    memcpy_summary,
    names_from_entities,
)
from gtop.analysis.kernels.demangle import demangle, shorten
from gtop.core import layouts
from gtop.core.hub import Entity
from gtop.core.layouts import ApiClass, CopyKind

NAMES = {1: "_Z4gemmPfS_S_", 2: "triton_poi_fused_add_0", 3: "_Z4gemmPfS_S_"}


def kernels(rows: list[tuple[int, int, int]], stream: int = 7) -> np.ndarray:
    """(name_id, start, duration) rows."""
    k = layouts.KERNEL.empty(len(rows))
    for i, (name_id, start, dur) in enumerate(rows):
        k[i]["name_id"], k[i]["t_ns"], k[i]["end_ns"] = name_id, start, start + dur
    k["stream"], k["grid_x"], k["block_x"], k["registers"] = stream, 64, 256, 32
    return k


@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 3]), st.integers(0, 10**9), st.integers(0, 10**6)),
        min_size=1,
        max_size=200,
    ),
    st.integers(1, 5),
)
def test_kernel_totals_are_exact_and_batches_add_up(rows, splits):
    stats = KernelStats()
    for part in np.array_split(np.arange(len(rows)), splits):
        stats.add(kernels([rows[i] for i in part]))
    out = {r.name: r for r in stats.rows(NAMES)}
    for name in set(NAMES.values()):
        durs = [d for n, _, d in rows if NAMES[n] == name]
        if not durs:
            assert name not in out
            continue
        row = out[name]
        assert (row.count, row.total_ns, row.max_ns, row.min_ns) == (
            len(durs),
            sum(durs),
            max(durs),
            min(durs),
        )
        assert row.mean_ns == sum(durs) / len(durs)
    assert [r.total_ns for r in stats.rows(NAMES)] == sorted(
        (r.total_ns for r in stats.rows(NAMES)), reverse=True
    )


def test_kernel_rows_carry_geometry_and_readable_names():
    k = kernels([(1, 0, 10), (1, 20, 30)], stream=3)
    k[1]["grid_x"], k[1]["dynamic_smem"] = 128, 4096
    (row,) = kernel_summary(k, {1: "_Z4gemmPfS_S_"})
    assert row.demangled == "gemm(float*, float*, float*)" and row.short == "gemm"
    assert row.grid == (128, -1, -1) and row.block == (256, -1, -1)
    assert row.dynamic_smem == 4096 and row.registers == 32 and row.streams == (3,)


def test_incomplete_kernels_are_skipped():
    k = kernels([(1, 0, 10), (1, 5, 10)])
    k[1]["end_ns"] = -1
    (row,) = kernel_summary(k, NAMES)
    assert row.count == 1


def test_unnamed_kernels_get_a_placeholder():
    (row,) = kernel_summary(kernels([(9, 0, 1)]), {})
    assert row.name == "<kernel 9>"


def test_memcpy_by_direction():
    m = layouts.MEMCPY.empty(3)
    m["t_ns"], m["end_ns"] = [0, 0, 0], [1000, 1000, 2000]
    m["bytes"] = [1000, 3000, 500]
    m["copy_kind"] = [CopyKind.HTOD, CopyKind.HTOD, CopyKind.DTOH]
    rows = {r.kind: r for r in memcpy_summary(m)}
    assert rows["HTOD"].count == 2 and rows["HTOD"].bytes == 4000
    assert rows["HTOD"].gb_per_s == 2.0 and rows["DTOH"].total_ns == 2000


def test_api_per_thread_rates_and_share():
    a = layouts.API.empty(4)
    a["t_ns"] = [0, 100, 200, 0]
    a["end_ns"] = [10, 110, 1_000_000_000, 50]
    a["pid"], a["tid"] = 5, [11, 11, 11, 12]
    a["domain"], a["cbid"] = 0, [211, 211, 165, 211]
    a["api_class"] = [ApiClass.LAUNCH, ApiClass.LAUNCH, ApiClass.SYNC, ApiClass.LAUNCH]
    rows = api_summary(a)
    top = rows[0]
    assert (top.tid, top.name, top.api_class, top.calls) == (11, "cudaDeviceSynchronize", "SYNC", 1)
    launch = next(r for r in rows if r.tid == 11 and r.name == "cudaLaunchKernel")
    assert launch.calls == 2 and launch.total_ns == 20 and launch.calls_per_s == 2.0
    assert abs(top.time_pct - 100.0 * (1_000_000_000 - 200) / 1_000_000_000) < 1e-9


def test_report_sections_are_json_ready():
    import json

    rep = kernels_report(
        kernels([(1, 0, 10)]), layouts.MEMCPY.empty(0), layouts.API.empty(0), NAMES
    )
    text = json.dumps(rep)
    assert set(rep) == {"kernels", "memcpy", "api"}
    k = json.loads(text)["kernels"][0]
    assert {"name", "count", "total_ns", "mean_ns", "max_ns"} <= set(k)


def test_names_from_entities():
    ents = [
        Entity("kernel_name", "4", 0, {"name": "a", "pid": 1}),
        Entity("marker_name", "5", 0, {"name": "b", "pid": 1}),
    ]
    assert names_from_entities(ents) == {4: "a"}


def test_shorten_keeps_last_scopes_and_elides_templates():
    name = (
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEE"
        "viT0_T1_"
    )
    assert demangle(name).startswith("void at::native::vectorized_elementwise_kernel<4,")
    assert shorten(name) == "native::vectorized_elementwise_kernel<…>"
    assert shorten("x" * 100, width=10) == "x" * 9 + "…"
    assert shorten("CUDA graph 2") == "CUDA graph 2"  # a graph launch's row keeps its name
