"""Probed kernels on a real GPU (run: pytest -m gpu tests/probes).

Original and instrumented PTX are JIT-loaded with cuModuleLoadData and launched the same
way; probe buffers are bound through cuModuleGetGlobal.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def gw() -> ModuleType:
    """benchmarks/gpu_workloads.py (imports torch, triton and cuda-bindings)."""
    sys.path.insert(0, str(BENCH))
    import gpu_workloads
    import torch
    from cuda.bindings import driver

    torch.cuda.init()
    torch.zeros(1, device="cuda")  # make the primary context current
    driver.cuInit(0)
    return gpu_workloads


@pytest.fixture(scope="module")
def loads(gw: ModuleType) -> dict:
    """name -> (workload, original module, original outputs), checked against torch."""
    import torch

    out = {}
    for w in gw.workloads():
        module = gw.load_ptx(w.ptx)
        w.run(module)
        torch.cuda.synchronize()
        assert gw.same(w.outputs, w.reference(), exact=False), f"{w.name}: launch path is wrong"
        out[w.name] = (w, module, [t.clone() for t in w.outputs])
    return out


def _sm_count() -> int:
    import torch

    return torch.cuda.get_device_properties(0).multi_processor_count


@pytest.mark.parametrize("probe", ["block_sched", "tensorop", "mem_trace"])
def test_results_unchanged(gw: ModuleType, loads: dict, probe: str) -> None:
    import torch

    for name, (w, _, want) in loads.items():
        inst, module, bufs = gw.load_probed(w, probe, sample=8 if probe == "mem_trace" else 1)
        bufs.reset()
        w.run(module)
        torch.cuda.synchronize()
        assert gw.same(w.outputs, want, exact=w.exact), f"{name}: results changed by {probe}"
        records, _ = bufs.read()
        bufs.close()
        (kernel,) = inst.kernels
        # TMA-only kernels have no traced mem_trace sites (their tensor copies are only
        # counted); warps without tensor ops write no tensorop record.
        traced = set(kernel.sites) - {"entry", "untraced_tensor_copy"}
        writes = bool(traced) and (probe != "tensorop" or kernel.classes)
        assert (len(records) > 0) == bool(writes), f"{name}: {probe}: {len(records)} records"


@pytest.mark.parametrize("map_kind", ["ring", "array"])
def test_block_sched_records_complete(gw: ModuleType, loads: dict, map_kind: str) -> None:
    from gtop.probes.catalog import block_sched

    for name, (w, _, _) in loads.items():
        _, module, bufs = gw.load_probed(w, "block_sched", map_kind=map_kind)
        bufs.reset()
        w.run(module)
        rec, overflow = bufs.read()
        bufs.close()
        assert overflow == 0, name
        assert len(rec) == w.warps, f"{name}: {len(rec)} records for {w.warps} warps"
        blocks = w.grid[0] * w.grid[1] * w.grid[2]
        assert np.array_equal(np.unique(rec["block"]), np.arange(blocks)), name
        keys = rec["block"].astype(np.int64) * 256 + rec["warp"]
        assert len(np.unique(keys)) == w.warps, name
        assert (rec["end_ns"] >= rec["start_ns"]).all() and (rec["clocks"] > 0).all(), name
        if blocks >= 4 * _sm_count():
            assert len(np.unique(rec["smid"])) == _sm_count(), f"{name}: SMs not covered"
        sched = block_sched.analyse(rec)
        assert sched.blocks == blocks and sched.sms == len(np.unique(rec["smid"]))


def test_tensorop_counts_match_the_kernels(gw: ModuleType, loads: dict) -> None:
    from gtop.probes.catalog import tensorop

    expected = {
        "triton_matmul_wgmma": ("wgmma.m64n128k16.f32.f16.f16", 4096 // 64 * 8),
        "triton_matmul_tma": ("wgmma.m64n128k16.f32.f16.f16", 4096 // 64 * 8),
        "wmma_gemm": ("wmma.m16n16k16.f32.f32", 2048 // 16),
    }
    for name, (cls, per_warp) in expected.items():
        w = loads[name][0]
        inst, module, bufs = gw.load_probed(w, "tensorop")
        bufs.reset()
        w.run(module)
        rec, overflow = bufs.read()
        bufs.close()
        assert overflow == 0 and len(rec) == w.warps, name
        (kernel,) = inst.kernels
        assert kernel.classes[0] == cls, name
        assert (rec["count"][:, 0] == per_warp).all(), (name, np.unique(rec["count"][:, 0]))
        assert (rec["cycles"][:, 0] > 0).all() and (rec["last_clock"] > rec["first_clock"]).all()
        summary = tensorop.analyse(rec, kernel.classes)
        assert summary.per_class[cls].count == per_warp * w.warps


@pytest.mark.parametrize("sample", [1, 8])
def test_mem_trace_saxpy_addresses(gw: ModuleType, loads: dict, sample: int) -> None:
    w = loads["saxpy"][0]
    n = int(w.args[0])
    x, y = int(w.args[2]), int(w.args[3])
    _, module, bufs = gw.load_probed(w, "mem_trace", sample=sample)
    bufs.reset()
    w.run(module)
    rec, overflow = bufs.read()
    bufs.close()
    assert overflow == 0
    if sample == 1:  # every thread: load x[i], load y[i], store y[i]
        assert len(rec) == 3 * n
        assert int(rec["is_store"].sum()) == n
    else:  # hashed phases: about 3 in 8 threads keep one of their 3 accesses
        assert abs(len(rec) - 3 * n / 8) < 0.05 * 3 * n / 8
    assert (rec["width"] == 4).all()
    in_x = (rec["addr"] >= x) & (rec["addr"] < x + 4 * n)
    in_y = (rec["addr"] >= y) & (rec["addr"] < y + 4 * n)
    assert (in_x | in_y).all()
    assert not (rec["is_store"].astype(bool) & in_x).any()


def test_copy_back_without_blocking_the_stream(gw: ModuleType, loads: dict) -> None:
    import torch

    from gtop.probes.engine import copyback

    w = loads["triton_add_int"][0]
    _, module, bufs = gw.load_probed(w, "block_sched")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        bufs.reset(stream.cuda_stream)
        w.run(module, stream.cuda_stream)
        pending = bufs.copy_async(stream.cuda_stream)
    deadline = time.monotonic() + 10
    while not pending.ready():  # never blocks; the app's stream was not synchronised
        assert time.monotonic() < deadline, "copy-back never finished"
        time.sleep(0.001)
    rec, overflow = copyback.decode(bufs.layout, pending.take(), bufs.probe)  # as gtop decodes it
    assert overflow == 0 and len(rec) == w.warps
    again, _ = bufs.read()
    assert np.array_equal(
        np.sort(rec, order=["block", "warp"]), np.sort(again, order=["block", "warp"])
    )
    bufs.close()
