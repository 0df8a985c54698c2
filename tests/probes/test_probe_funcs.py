"""Sites inside ``.func`` device functions (real nvcc output, ``nvcc_cuda_funcs.ptx``):
which functions are instrumented, the ids their records carry, and the records the
inserted code writes, executed by the warp interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from gtop.probes.catalog import PROBES
from gtop.probes.engine import ptx
from gtop.probes.engine.probe import MapKind
from gtop.probes.engine.rewrite import RewriteError, instrument, read_header

from .helpers import CORPUS, inserted_snippets
from .warp_sim import Device, Warp, run

SOURCE = (CORPUS / "nvcc_cuda_funcs.ptx").read_text()
LOAD = "_Z11load_scaledPKfif$5"  # what scale_pairs calls (rdc's internal alias)
MMA_TILE = "_Z8mma_tilePKjS0_Pf$1"


def snippets(text: str, name: str) -> list[str]:
    """The code inserted into function ``name`` of an instrumented text: its prologue,
    then one snippet per site in order (each site's starts by setting ``%gtop_g``)."""
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith(".") and f" {name}(" in ln)
    start = lines.index("{", head) + 1
    return inserted_snippets(lines[start : lines.index("}", start)])


def test_functions_get_ids_after_the_kernels() -> None:
    module = ptx.parse(SOURCE)
    result = instrument(module, PROBES["mem_trace"])
    names = [k.name for k in result.kernels]
    assert names == ["pair_max", "scale_pairs", "block_sums", "mma_calls", "copy"]
    funcs = {f.name: f for f in result.functions}
    # every .func body with a global access: .visible, .weak (the template instance),
    # recursive (tree_sum), void (store_pair) and rdc's internal aliases
    assert {"_Z8load_maxIdET_PKS0_ii", "bump", "_Z8tree_sumPKfii$3", LOAD} <= set(funcs)
    assert [f.kernel_id for f in result.functions] == list(range(5, 5 + len(funcs)))
    assert funcs["_Z8tree_sumPKfii$3"].sites == {"access": 2}
    header = read_header(result.text)
    assert [f["name"] for f in header["functions"]] == list(funcs)


def test_a_kernel_pattern_keeps_only_the_functions_it_can_call() -> None:
    result = instrument(ptx.parse(SOURCE), PROBES["mem_trace"], kernel="^block_sums$")
    assert [f.name for f in result.functions] == ["bump$2", "_Z8tree_sumPKfii$3"]  # module order
    assert [f.kernel_id for f in result.functions] == [1, 2]


def test_probes_without_function_support_leave_functions_alone() -> None:
    result = instrument(ptx.parse(SOURCE), PROBES["block_sched"])
    assert result.functions == []
    assert "functions" not in read_header(result.text)


@pytest.mark.parametrize("sample", [1, 4])
def test_mem_trace_records_in_a_func_carry_its_id(sample: int) -> None:
    result = instrument(ptx.parse(SOURCE), PROBES["mem_trace"], sample=sample)
    fid = next(f.kernel_id for f in result.functions if f.name == LOAD)
    prologue, access = snippets(result.text, LOAD)
    dev = Device(capacity=256, record_size=32)
    for call in range(sample):  # each call restarts the counter: clock mixes its phase
        w = Warp(smid=3, clock=100 + call, globaltimer=5000)
        for lane in range(32):
            w.regs[lane]["%rd4"] = 0x7000_0000 + 4 * lane
        run(prologue, w, dev)
        run(access, w, dev)
    rec, drops = dev.decode(PROBES["mem_trace"].record, True)
    assert drops == 0 and (rec["kernel"] == fid).all()
    assert (rec["width"] == 4).all() and (rec["is_store"] == 0).all() and (rec["smid"] == 3).all()
    # 1 in N per thread over N calls; every lane's address once
    assert len(rec) == 32 and sorted(rec["addr"]) == [0x7000_0000 + 4 * i for i in range(32)]


def test_tensorop_func_adds_into_the_warps_slot() -> None:
    """mma_tile is called twice by a warp of mma_calls: both calls add into the warp's
    array slot with atomics, and the kernel exit adds nothing more and writes the
    header fields."""
    result = instrument(ptx.parse(SOURCE), PROBES["tensorop"])
    kernel = next(k for k in result.kernels if k.name == "mma_calls")
    assert kernel.classes == ["mma.m16n8k16.f32.bf16.bf16.f32"]
    assert [f.classes for f in result.functions] == [kernel.classes] * 2
    entry, exit_ = snippets(result.text, "mma_calls")
    prologue, before, after, ret = snippets(result.text, MMA_TILE)
    record = PROBES["tensorop"].record
    dev = Device(capacity=8, record_size=record.itemsize)
    w = Warp(warp=2, smid=4)
    run(entry, w, dev)
    for start in (1000, 5000):  # two calls of the function
        caller = {lane: dict(regs) for lane, regs in w.regs.items()}  # its own registers
        run(prologue, w, dev)
        w.clock = start
        run(before, w, dev)
        w.clock = start + 40
        run(after, w, dev)
        run(ret, w, dev)
        w.regs = caller
    w.clock, w.globaltimer = 9000, 123_000
    run(exit_, w, dev)
    (rec,), drops = dev.decode(record, False)
    assert drops == 0
    assert rec["count"][0] == 2 and rec["cycles"][0] == 80
    assert (rec["first_clock"], rec["last_clock"]) == (1000, 5040)
    assert (rec["warp"], rec["smid"], rec["kernel"]) == (2, 4, kernel.kernel_id)
    assert (rec["exit_clock"], rec["exit_ns"]) == (9000, 123_000)


def test_tensorop_func_sites_need_the_array_map() -> None:
    with pytest.raises(RewriteError, match="array map"):
        instrument(ptx.parse(SOURCE), PROBES["tensorop"], map_kind=MapKind.RING)


def test_kernels_that_call_no_mma_function_stay_untouched() -> None:
    result = instrument(ptx.parse(SOURCE), PROBES["tensorop"])
    kernels = {k.name: k for k in result.kernels}
    assert kernels["copy"].sites == {} and kernels["scale_pairs"].sites == {}
    assert np.all([f.sites["mma"] == 1 for f in result.functions])
