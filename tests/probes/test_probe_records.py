"""The code the rewriter emits, executed by a warp interpreter: the records it writes,
decoded with the probe's own layout, hold what the probe promises."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pytest

from gtop.probes.catalog import PROBES
from gtop.probes.catalog.block_sched import PACKED
from gtop.probes.engine import ptx
from gtop.probes.engine.probe import Level, MapKind
from gtop.probes.engine.rewrite import instrument

from .helpers import CORPUS, inserted_snippets
from .warp_sim import BUF_BASE, Device, Warp, run

HEAD = """\
.version 8.7
.target sm_90a
.address_size 64

.visible .entry k()
{
\t.reg .pred %p<10>;
\t.reg .b32 %r<16>;
\t.reg .f32 %f<16>;
\t.reg .b64 %rd<4>;
"""
MMA = (
    "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
    "{%f1,%f2,%f3,%f4}, {%r3,%r4}, {%r5}, {%f1,%f2,%f3,%f4};"
)


def blocks(body: str, probe: str, **options) -> list[str]:
    """The code the rewriter inserted into the kernel, entry first, then one snippet per
    site in order (each site's snippet starts by setting its guard ``%gtop_g``)."""
    text = instrument(ptx.parse(HEAD + body + "}\n"), PROBES[probe], **options).text
    lines = text.splitlines()
    return inserted_snippets(lines[lines.index("{") + 1 :])


def decode(probe: str, dev: Device, ring: bool = True) -> tuple[np.ndarray, int]:
    return dev.decode(PROBES[probe], ring)


def tensorop_record(
    w: Warp, entry: str, steps: Iterable[tuple[int, str]], exit_: str, exit_at: tuple[int, int]
) -> tuple[np.ndarray, int]:
    """Run one warp through a tensorop kernel: ``entry``, then each site's code at its
    clock, then ``exit_`` at ``exit_at`` (clock, globaltimer); its record and drops."""
    dev = Device(capacity=4, record_size=PROBES["tensorop"].record.itemsize)
    run(entry, w, dev)
    for clock, code in steps:
        w.clock = clock
        run(code, w, dev)
    w.clock, w.globaltimer = exit_at
    run(exit_, w, dev)
    (rec,), drops = decode("tensorop", dev, ring=False)
    return rec, drops


@pytest.mark.parametrize("map_kind", [MapKind.ARRAY, MapKind.RING])
def test_block_sched_one_record_per_warp(map_kind: MapKind) -> None:
    # the kernel reads %ctaid.y: a 2-D launch is indexed in full (not Site.flat)
    entry, exit_ = blocks("\tmov.u32 %r1, %ctaid.y;\n\tret;\n", "block_sched", map_kind=map_kind)
    size = PROBES["block_sched"].device_record(map_kind).itemsize
    dev = Device(capacity=64, record_size=size)
    warps = [
        Warp(ctaid=(3, 1, 0), nctaid=(4, 2, 1), warp=w, smid=7 + w, clock=100, globaltimer=10**9)
        for w in range(4)
    ]
    for w in warps:
        run(entry, w, dev)
    for i, w in enumerate(warps):
        w.clock, w.globaltimer = 100 + 50 * (i + 1), 10**9 + 1000 * (i + 1)
        run(exit_, w, dev)
    if map_kind is MapKind.ARRAY:  # block 0's warp 0 (every launch has one) writes gtop_launch
        slot0 = Warp(nctaid=(4, 2, 1), clock=1, globaltimer=1)
        run(entry, slot0, dev)
        run(exit_, slot0, dev)
    rec, drops = decode("block_sched", dev, ring=map_kind is MapKind.RING)
    rec = rec[rec["start_ns"] != 1]
    assert drops == 0 and len(rec) == 4
    assert rec["start_ns"].tolist() == [10**9] * 4
    assert rec["end_ns"].tolist() == [10**9 + 1000 * (i + 1) for i in range(4)]
    assert rec["clocks"].tolist() == [50, 100, 150, 200]
    assert rec["block"].tolist() == [1 * 4 + 3] * 4  # ctaid.y * nctaid.x + ctaid.x
    assert rec["warp"].tolist() == [0, 1, 2, 3] and rec["smid"].tolist() == [7, 8, 9, 10]
    assert (rec["kernel"] == 0).all()


def test_block_sched_predicated_exit_writes_from_the_lowest_exiting_lane() -> None:
    entry, at_pred, at_ret = blocks("\t@%p9 ret;\n\tret;\n", "block_sched", map_kind=MapKind.RING)
    dev = Device(capacity=4, record_size=32)
    w = Warp(active=tuple(range(5, 32)), warp=2)
    run(entry, w, dev)
    run(at_pred, w, dev, guard={lane: lane >= 20 for lane in range(32)})
    rec, _ = decode("block_sched", dev)
    assert len(rec) == 1 and rec["warp"][0] == 2
    w.active = tuple(range(5, 20))  # lanes 20.. left; the rest leave at the plain ret
    run(at_ret, w, dev)
    rec, _ = decode("block_sched", dev)
    assert len(rec) == 2  # one record per exit group of the warp


def test_thread_level_ring_claims_one_slot_per_lane_and_counts_drops() -> None:
    entry, exit_ = blocks("\tret;\n", "block_sched", level=Level.THREAD, map_kind=MapKind.RING)
    dev = Device(capacity=40, record_size=32)
    for wid in range(2):
        w = Warp(warp=wid)
        run(entry, w, dev)
        run(exit_, w, dev)
    rec, drops = decode("block_sched", dev)
    assert len(rec) == 40 and drops == 24
    assert dev.read(dev.globals["gtop_overflow"], 4) == 0  # rings count drops by slot


def test_ring_stripes_keep_each_sm_in_its_own_region() -> None:
    entry, exit_ = blocks("\tret;\n", "block_sched", level=Level.THREAD, map_kind=MapKind.RING)
    dev = Device(capacity=4 * 40, record_size=32, stripes=4)
    for wid, sm in enumerate([1, 6, 1, 2]):  # SM 6 maps to stripe 2, as SM 2 does
        w = Warp(warp=wid, smid=sm)
        run(entry, w, dev)
        run(exit_, w, dev)
    assert dev.slots().tolist() == [0, 64, 64, 0]
    rec, drops = decode("block_sched", dev)
    assert drops == 2 * (64 - 40) and len(rec) == 80
    assert sorted(set(rec["smid"].tolist())) == [1, 2, 6]


def test_array_map_indexes_by_block_and_warp() -> None:
    entry, exit_ = blocks("\tret;\n", "block_sched", map_kind=MapKind.ARRAY)
    dev = Device(capacity=2 * 4, record_size=16)
    for block in (1, 0):
        for wid in (3, 0):
            w = Warp(ctaid=(block, 0, 0), nctaid=(2, 1, 1), warp=wid, globaltimer=5)
            run(entry, w, dev)
            run(exit_, w, dev)
    raw = np.frombuffer(bytes(dev.mem[BUF_BASE : BUF_BASE + 8 * 16]), PACKED)
    assert np.flatnonzero(raw["start_ns"]).tolist() == [0, 3, 4, 7]
    rec, drops = decode("block_sched", dev, ring=False)
    assert len(rec) == 4 and drops == 0
    assert [(int(r["block"]), int(r["warp"])) for r in rec] == [(0, 0), (0, 3), (1, 0), (1, 3)]


def test_array_map_counts_warps_past_the_capacity() -> None:
    entry, exit_ = blocks("\tret;\n", "block_sched", map_kind=MapKind.ARRAY)
    dev = Device(capacity=6, record_size=16)
    for block in range(2):
        for wid in range(4):
            w = Warp(ctaid=(block, 0, 0), nctaid=(2, 1, 1), warp=wid, globaltimer=5, clock=1)
            run(entry, w, dev)
            run(exit_, w, dev)
    rec, drops = decode("block_sched", dev, ring=False)
    assert len(rec) == 6 and drops == 2


def test_packed_clocks_and_long_warps_decode_to_full_records() -> None:
    """Cycles below 2^19 come back exact, larger ones within 1 in 2^19; a warp longer
    than 2^32 ns gets its whole periods back from its cycles."""
    entry, exit_ = blocks("\tret;\n", "block_sched", map_kind=MapKind.ARRAY)
    cycles = [1, 2**19 - 1, 3_000_001, 2**31 + 12345, 2**36 + 7]
    dev = Device(capacity=len(cycles), record_size=16)
    t0 = 1_700_000_000_000_000_123
    for wid, c in enumerate(cycles):
        w = Warp(warp=wid, ntid=(32 * len(cycles), 1, 1), smid=131, clock=10, globaltimer=t0)
        run(entry, w, dev)
        w.clock, w.globaltimer = 10 + c, t0 + c // 2  # 2 cycles per ns
        run(exit_, w, dev)
    rec, _ = decode("block_sched", dev, ring=False)
    assert rec["clocks"][:2].tolist() == cycles[:2]
    assert np.allclose(rec["clocks"].astype(float), cycles, rtol=2**-19, atol=0)
    assert (rec["end_ns"] - rec["start_ns"]).tolist() == [c // 2 for c in cycles]
    assert (rec["smid"] == 131).all() and rec["warp"].tolist() == list(range(len(cycles)))


def test_disarmed_probe_writes_and_counts_nothing() -> None:
    entry, exit_ = blocks("\tret;\n", "block_sched", level=Level.THREAD, map_kind=MapKind.RING)
    dev = Device(capacity=8, record_size=32)
    dev.write(dev.globals["gtop_cap"], 4, 0)
    w = Warp()
    run(entry, w, dev)
    run(exit_, w, dev)
    assert dev.slots().tolist() == [0]
    assert not any(dev.mem[BUF_BASE:])


def test_tensorop_counts_and_times_each_class() -> None:
    body = f"{MMA}\n{MMA}\n\twgmma.wait_group.sync.aligned 0;\n\tret;\n"
    entry, *sites, exit_ = blocks(body, "tensorop")
    assert len(sites) == 5  # before/after each mma, after the wait
    clocks = [1000, 1010, 1100, 1130, 1500]
    rec, drops = tensorop_record(
        Warp(warp=1, smid=3), entry, zip(clocks, sites, strict=True), exit_, (2000, 777_000)
    )
    assert drops == 0
    assert rec["count"][0] == 2 and rec["cycles"][0] == 10 + 30
    assert (rec["count"][1:] == 0).all()
    assert (rec["first_clock"], rec["last_clock"]) == (1000, 1500)
    assert rec["wait_count"] == 1
    assert (rec["exit_clock"], rec["exit_ns"], rec["warp"], rec["smid"]) == (2000, 777_000, 1, 3)


WGMMA = "\twgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%f1}, %rd1, %rd2, 1, 1, 1;"
WAIT = "\twgmma.wait_group.sync.aligned 0;"


@pytest.mark.parametrize("base", [0, 2**32 - 300], ids=["low", "across-2^32"])
def test_tensorop_times_wgmma_from_issue_to_wait(base: int) -> None:
    """wgmma is counted per instruction and timed per span: from the first wgmma issued
    while no span is open to the end of the next wait_group. Clocks are read 32-bit and
    widened at exit, so a span across a 2^32 boundary of %clock64 still adds up."""
    body = "\n".join([WGMMA, WGMMA, WAIT, WGMMA, WAIT, "\tret;"]) + "\n"
    entry, *sites, exit_ = blocks(body, "tensorop")
    # span-opening wgmma (counting its run's two), wait, span-opening wgmma, wait
    assert len(sites) == 4
    clocks = [base + c for c in (100, 400, 500, 900)]
    rec, drops = tensorop_record(
        Warp(warp=2, smid=1), entry, zip(clocks, sites, strict=True), exit_, (base + 1000, 5_000)
    )
    assert drops == 0
    assert rec["count"][0] == 3 and rec["cycles"][0] == (400 - 100) + (900 - 500)
    assert rec["wait_count"] == 2
    assert (rec["first_clock"], rec["last_clock"]) == (base + 100, base + 900)


WGMMA_BF16 = "\twgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, 1, 1, 1;"


def test_tensorop_counts_a_mixed_class_run_once_per_class() -> None:
    """A run's first wgmma counts the run's wgmmas of its class; one of another class
    counts itself; a guarded one counts itself when it runs; a span straddling a loop's
    back edge (no wait in between) stays open and closes at the next wait."""
    body = "\n".join(
        [WGMMA, WGMMA_BF16, WGMMA, "\t@%p1 " + WGMMA.strip(), WGMMA_BF16, WAIT, "\tret;"]
    )
    entry, *sites, exit_ = blocks(body + "\n", "tensorop")
    # the first wgmma (its run's 2 of class 0), each bf16 (itself: not the run's first
    # class), the guarded wgmma (itself), the wait
    assert len(sites) == 5
    assert "add.u32 %gtop_tc_n0, %gtop_tc_n0, 2;" in sites[0]
    assert "add.u32 %gtop_tc_n1, %gtop_tc_n1, 1;" in sites[1]
    w = Warp(warp=0, smid=2)

    def steps() -> Iterator[tuple[int, str]]:
        for p1 in (0, 0, 1):  # the run three times, as a loop would, with no wait between
            for lane in range(32):
                w.regs[lane]["%p1"] = p1
            for clock, code in zip([100, 104, 108, 112], sites[:4], strict=True):
                yield clock + 1000 * p1, code
        yield 1700, sites[4]

    rec, drops = tensorop_record(w, entry, steps(), exit_, (2000, 5_000))
    assert drops == 0
    assert rec["count"][:2].tolist() == [2 + 2 + 3, 2 + 2 + 2]
    assert rec["cycles"][0] == 1700 - 100 and rec["cycles"][1] == 0  # class 0 opened it
    assert rec["wait_count"] == 1
    assert (rec["first_clock"], rec["last_clock"]) == (100, 1700)


@pytest.mark.parametrize("level", [Level.THREAD, Level.WARP])
def test_mem_trace_records_address_width_and_direction(level: Level) -> None:
    body = "\tld.global.v2.u32 {%r1, %r2}, [%rd1+8];\n\tst.global.u16 [%rd1], %r1;\n\tret;\n"
    entry, load, store = blocks(body, "mem_trace", level=level)
    dev = Device(capacity=128, record_size=32)
    w = Warp(smid=5, clock=40, globaltimer=9000)
    for lane in range(32):
        w.regs[lane]["%rd1"] = 0x7000_0000 + 64 * lane
    for code in (entry, load, store):
        run(code, w, dev)
    rec, drops = decode("mem_trace", dev)
    n = 32 if level is Level.THREAD else 1
    assert drops == 0 and len(rec) == 2 * n
    loads, stores = rec[:n], rec[n:]
    assert loads["addr"].tolist() == [0x7000_0000 + 64 * lane + 8 for lane in range(n)]
    assert stores["addr"].tolist() == [0x7000_0000 + 64 * lane for lane in range(n)]
    assert (loads["width"] == 8).all() and (stores["width"] == 2).all()
    assert (loads["is_store"] == 0).all() and (stores["is_store"] == 1).all()
    assert (
        (rec["smid"] == 5).all() and (rec["time_ns"] == 9000).all() and (rec["clock"] == 40).all()
    )


def test_mem_trace_records_wmma_tiles_once_per_warp() -> None:
    """wmma.load/store (as nvcc emits them) are warp-wide: one record per warp, with the
    tile's base address and its whole size."""
    body = (
        "\twmma.load.a.sync.aligned.row.m16n16k16.global.f16 "
        "{%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1], %r9;\n"
        "\twmma.store.d.sync.aligned.row.m16n16k16.global.f32 "
        "[%rd2+64], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, %r9;\n\tret;\n"
    )
    entry, load, store = blocks(body, "mem_trace")  # thread level by default
    dev = Device(capacity=64, record_size=32)
    w = Warp(smid=2)
    for lane in range(32):
        w.regs[lane].update({"%rd1": 0x7000_0000, "%rd2": 0x7100_0000})
    for code in (entry, load, store):
        run(code, w, dev)
    rec, drops = decode("mem_trace", dev)
    assert drops == 0 and len(rec) == 2
    assert rec["addr"].tolist() == [0x7000_0000, 0x7100_0040]
    assert rec["width"].tolist() == [16 * 16 * 2, 16 * 16 * 4]
    assert rec["is_store"].tolist() == [0, 1]


def test_mem_trace_counts_the_tensor_copies_it_cannot_trace() -> None:
    text = (CORPUS / "triton_matmul_tma.ptx").read_text()
    (kernel,) = instrument(ptx.parse(text), PROBES["mem_trace"]).kernels
    copies = text.count("cp.async.bulk.tensor")
    assert copies > 0 and kernel.sites["untraced_tensor_copy"] == copies
    assert "access" not in kernel.sites  # TMA alone moves this kernel's tiles


def test_mem_trace_sampling_keeps_one_in_n_spread_over_threads() -> None:
    body = "\tld.global.u32 %r1, [%rd1];\n" * 3 + "\tret;\n"
    entry, *sites = blocks(body, "mem_trace", sample=8)
    dev = Device(capacity=4096, record_size=32)
    for wid in range(4):
        w = Warp(warp=wid)
        for lane in range(32):
            w.regs[lane]["%rd1"] = 4 * (32 * wid + lane)
        run(entry, w, dev)
        for code in sites:
            run(code, w, dev)
    rec, _ = decode("mem_trace", dev)
    assert len(rec) == 3 * 128 // 8  # exactly 3 in 8 threads keep one of their 3 accesses
    assert len(np.unique(rec["addr"])) == len(rec)


def test_mem_trace_keeps_generic_accesses_only_when_they_hit_global_memory() -> None:
    body = "\tld.u32 %r1, [%rd1];\n\tld.param.u32 %r2, [%rd1];\n\tret;\n"
    entry, generic = blocks(body, "mem_trace")  # ld.param is not a site
    dev = Device(capacity=64, record_size=32)
    w = Warp()
    for lane in range(32):  # even lanes point at global memory, odd ones at a local window
        w.regs[lane]["%rd1"] = (0x7000_0000 if lane % 2 == 0 else 0x100) + 4 * lane
    run(entry, w, dev)
    run(generic, w, dev)
    rec, _ = decode("mem_trace", dev)
    assert rec["addr"].tolist() == [0x7000_0000 + 4 * lane for lane in range(0, 32, 2)]


def test_tensorop_warps_without_tensor_ops_write_nothing() -> None:
    entry, *_, exit_ = blocks(f"{MMA}\n\tret;\n", "tensorop")
    dev = Device(capacity=8, record_size=PROBES["tensorop"].record.itemsize)
    w = Warp(warp=2)
    run(entry, w, dev)  # the mma sites are skipped: this warp never issues one
    run(exit_, w, dev)
    assert not any(dev.mem[BUF_BASE:])


@pytest.mark.parametrize("ntid", [(128, 1, 1), (32, 2, 2)])
def test_reqntid_kernels_index_like_any_other(ntid: tuple[int, int, int]) -> None:
    """With ``.reqntid`` the block shape is a constant in the probe code (no %ntid reads;
    %tid.x alone for a 1-D block): the records must not change."""
    shape = ", ".join(map(str, ntid))
    head = HEAD.replace(".visible .entry k()\n", f".visible .entry k()\n.reqntid {shape}\n")
    assert head != HEAD

    def records(with_reqntid: bool) -> np.ndarray:
        # reads %tid.y: the full index math, not Site.flat's shortcut
        text = (head if with_reqntid else HEAD) + "\tmov.u32 %r1, %tid.y;\n\tret;\n}\n"
        code = instrument(ptx.parse(text), PROBES["block_sched"], map_kind=MapKind.ARRAY).text
        assert ("%ntid" not in code) == with_reqntid
        lines = code.splitlines()
        body = [ln for ln in lines[lines.index("{") + 1 :] if "gtop" in ln and ".reg" not in ln]
        split = next(i for i, ln in enumerate(body) if ln.strip().startswith("mov.pred %gtop_g"))
        entry, exit_ = "\n".join(body[:split]), "\n".join(body[split:])
        dev = Device(capacity=3 * 4, record_size=16)
        for block, wid in ((2, 3), (2, 1), (0, 3), (0, 1), (0, 0)):
            w = Warp(ctaid=(block, 0, 0), nctaid=(3, 1, 1), ntid=ntid, warp=wid, smid=5)
            w.globaltimer = 1
            run(entry, w, dev)
            w.clock = 9
            run(exit_, w, dev)
        raw = bytes(dev.mem[BUF_BASE : BUF_BASE + 12 * 16])
        assert dev.decode(PROBES["block_sched"], ring=False)[1] == 0
        return np.frombuffer(raw, PACKED), dev.decode(PROBES["block_sched"], ring=False)[0]

    (plain, _), (fixed_raw, fixed) = records(False), records(True)
    assert plain.tobytes() == fixed_raw.tobytes()
    written = fixed[fixed["smid"] == 5]
    assert sorted((int(r["block"]), int(r["warp"])) for r in written) == [
        (0, 0),
        (0, 1),
        (0, 3),
        (2, 1),
        (2, 3),
    ]


@pytest.mark.parametrize("nctaid", [(4, 1, 1), (4, 2, 1)])
def test_block_sched_flat_kernel(nctaid: tuple[int, int, int]) -> None:
    """A kernel reading no y/z index is slotted by %ctaid.x/%tid.x (Site.flat): on a 1-D
    launch its records are those of the full index math; on a launch with a y/z size
    above 1 it writes none, and the host counts every slot of the launch as dropped."""

    def records(body: str) -> tuple[np.ndarray, int]:
        entry, exit_ = blocks(body + "\tret;\n", "block_sched", map_kind=MapKind.ARRAY)
        dev = Device(capacity=64, record_size=PACKED.itemsize)
        for block, wid in ((0, 0), (3, 2), (1, 3)):
            w = Warp(ctaid=(block, 0, 0), nctaid=nctaid, warp=wid, smid=9, clock=5)
            w.globaltimer = 10**9 + block
            run(entry, w, dev)
            w.clock, w.globaltimer = 50 + wid, 10**9 + 700
            run(exit_, w, dev)
        return dev.decode(PROBES["block_sched"], ring=False)

    flat, flat_drops = records("")
    full, full_drops = records("\tmov.u32 %r1, %ctaid.z;\n")
    assert len(full) == 3 and full_drops == 0
    if nctaid[1] == 1:
        assert flat.tobytes() == full.tobytes() and flat_drops == 0
    else:
        assert len(flat) == 0 and flat_drops == 4 * 2 * 4  # blocks x warps per block
