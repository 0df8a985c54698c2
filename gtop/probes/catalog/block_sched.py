"""block_sched: when and where each warp ran.

One record per warp (written at kernel exit by the lowest exiting lane; by default into
a fixed slot per (block, warp), so no atomics): start and end on
``%globaltimer`` (GPU-wide ns), elapsed ``%clock64`` cycles, SM id, linear block id and
warp-in-block id. A warp whose lanes leave through different exits writes one record per
exit; :func:`warps` merges them.

Kernel entry only reads the two clocks; everything else happens at exit. The array map
stores a packed 16-byte :data:`PACKED` record with one ``st.global.v2.u64`` (the ring
stores the full :data:`RECORD`, which carries its ids): the slot gives the block and
warp, ``gtop_launch`` the kernel id, and :func:`unpack` rebuilds :data:`RECORD` rows on
the host, so readers never see the packed layout. Packing, chosen to cost a few exit
instructions and no information in practice:

- ``start_ns``: ``%globaltimer`` at entry, all 64 bits;
- ``end_lo``: the low 32 bits of ``%globaltimer`` at exit. The duration is exact modulo
  2^32 ns (4.29 s); for a longer warp the whole periods are recovered from its cycles at
  the launch's median cycles-per-ns (exact unless its SM clock differed by half from the
  other warps');
- ``clocks_sm``: the low 8 bits are ``%smid`` (SM ids are < 256 on every GPU so far); the
  upper 24 the elapsed ``%clock64`` as a float with a 6-bit exponent and an 18-bit
  mantissa (the f32 conversion's bits, less the bias of 1.0, rounded to 5 fewer
  mantissa bits): exact below 2^19 cycles, within 1 in 2^19 above, any u64 in range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import maps
from ..engine.probe import ENTRY, EXIT, Level, MapKind, Probe, Site, Tracepoint
from ..entry import Entry, LaunchInfo

RECORD = np.dtype(
    [
        ("start_ns", "<u8"),
        ("end_ns", "<u8"),
        ("clocks", "<u8"),
        ("block", "<u4"),
        ("smid", "<u2"),
        ("warp", "u1"),
        ("kernel", "u1"),
    ]
)


# The array map's device record (see the module docstring).
PACKED = np.dtype([("start_ns", "<u8"), ("end_lo", "<u4"), ("clocks_sm", "<u4")])
_F32_ONE = 0x3F80_0000  # bits of 1.0f: the clock code's exponent counts from 2^0
_ROUND = 16  # half of the 5 mantissa bits dropped
_THREAD_FLAG = 0x100  # in gtop_launch[0] beside the kernel id: one record per thread


def _entry(site: Site) -> str:
    return "mov.u64 %gtop_bs_t0, %globaltimer;\nmov.u64 %gtop_bs_c0, %clock64;\n"


def _unguarded(site: Site) -> bool:
    return site.instr is not None and site.instr.guard is None


def _exit(site: Site) -> str:
    if site.map is MapKind.ARRAY:
        return _exit_array(site)
    return (
        maps.ids(site)
        + maps.writer(site.level, _unguarded(site))
        # unpredicated: the probe's own registers, and a predicated read costs a select
        + "mov.u64 %gtop_bs_t1, %globaltimer;\n"
        + "mov.u64 %gtop_bs_c1, %clock64;\n"
        + "sub.u64 %gtop_bs_c1, %gtop_bs_c1, %gtop_bs_c0;\n"
        + maps.slot(site, RECORD)
        + f"mov.u32 %gtop_x, {site.kernel_id};\n"
        + maps.store(
            RECORD,
            {
                "start_ns": "%gtop_bs_t0",
                "end_ns": "%gtop_bs_t1",
                "clocks": "%gtop_bs_c1",
                "block": "%gtop_blk",
                "smid": "%gtop_smid",
                "warp": "%gtop_wid",
                "kernel": "%gtop_x",
            },
        )
    )


def _exit_array(site: Site) -> str:
    """The packed record into slot (block, warp). Slot 0's warp writes ``gtop_launch``
    (kernel id, records per block, blocks): the host derives the drops, so that no warp
    runs the overflow atomic (which ptxas turns into a branch and a warp reduction)."""
    flag = _THREAD_FLAG if site.level is Level.THREAD else 0
    bias = ((_ROUND - _F32_ONE) << 3) & 0xFFFF_FFFF  # (bits + _ROUND - 1.0f) << 3
    return (
        "mov.u64 %gtop_bs_t1, %globaltimer;\n"
        "mov.u64 %gtop_bs_c1, %clock64;\n"
        + maps.ids(site, flat=True)
        + maps.writer(site.level, _unguarded(site))
        + maps.slot(site, PACKED, count_drops=False)
        + f"""\
sub.u64 %gtop_bs_c1, %gtop_bs_c1, %gtop_bs_c0;
cvt.rn.f32.u64 %gtop_bs_f, %gtop_bs_c1;
mov.b32 %gtop_y, %gtop_bs_f;
mad.lo.u32 %gtop_y, %gtop_y, 8, {bias};
bfi.b32 %gtop_y, %gtop_smid, %gtop_y, 0, 8;
cvt.u32.u64 %gtop_z, %gtop_bs_t1;
mov.b64 %gtop_w1, {{%gtop_z, %gtop_y}};
setp.eq.and.u32 %gtop_wl, %gtop_s, 0, %gtop_ok;
{"and.pred %gtop_ok, %gtop_ok, %gtop_of;" if site.flat else ""}
@%gtop_ok st.global.v2.u64 [%gtop_a], {{%gtop_bs_t0, %gtop_w1}};
mov.u32 %gtop_r, %gtop_x;
mov.u32 %gtop_y, %nctaid.x;
mov.u32 %gtop_z, %nctaid.y;
mul.lo.u32 %gtop_y, %gtop_y, %gtop_z;
mov.u32 %gtop_z, %nctaid.z;
mul.lo.u32 %gtop_y, %gtop_y, %gtop_z;
mov.u32 %gtop_x, {site.kernel_id | flag};
{_skipped(site)}@%gtop_wl st.global.v4.u32 [gtop_launch], {{%gtop_x, %gtop_r, %gtop_y, %gtop_x}};
"""
    )


def _skipped(site: Site) -> str:
    """For a flat site, mark the launch word when the launch was not 1-D (no record was
    written: the host counts them all as dropped)."""
    if not site.flat:
        return ""
    return (
        f"selp.u32 %gtop_b, 0, {maps.LAUNCH_SKIPPED}, %gtop_of;\n"
        "or.b32 %gtop_x, %gtop_x, %gtop_b;\n"
    )


def unpack(rows: np.ndarray, slots: np.ndarray, launch: np.ndarray) -> np.ndarray:
    """:data:`RECORD` rows from :data:`PACKED` ones at array ``slots``; ``launch`` is
    ``gtop_launch``: kernel id (and the thread flag), records per block, blocks."""
    out = np.zeros(len(rows), dtype=RECORD)
    per = max(int(launch[1]), 1)
    slots = np.asarray(slots, dtype=np.int64)
    out["kernel"] = int(launch[0]) & 0xFF
    out["block"] = slots // per
    out["warp"] = (slots % per) >> (5 if int(launch[0]) & _THREAD_FLAG else 0)
    word = rows["clocks_sm"]
    out["smid"] = word & 0xFF
    bits = ((word >> 8).astype(np.uint32) << 5) + np.uint32(_F32_ONE)
    clocks = np.rint(bits.view(np.float32).astype(np.float64))
    out["clocks"] = clocks.astype(np.uint64)
    start = rows["start_ns"]
    out["start_ns"] = start
    dur = (rows["end_lo"].astype(np.int64) - (start & 0xFFFF_FFFF).astype(np.int64)) % 2**32
    # Whole 2^32 ns periods, from the cycles at the launch's median rate (cycles per ns)
    sure = (dur >= 1000) & (clocks < 2**31)
    rate = float(np.median(clocks[sure] / dur[sure])) if sure.any() else 1.0
    est = clocks / rate
    wraps = np.where(est > 2**31, np.maximum(np.rint((est - dur) / 2**32), 0), 0)
    out["end_ns"] = start + (dur + wraps.astype(np.int64) * 2**32).astype(np.uint64)
    return out


PROBE = Probe(
    name="block_sched",
    doc="per warp: start/end %globaltimer, elapsed %clock64, SM, block, warp",
    record=RECORD,
    registers={**{f"%gtop_bs_{n}": ".b64" for n in ("t0", "c0", "t1", "c1")}, "%gtop_bs_f": ".f32"},
    tracepoints=(Tracepoint(ENTRY, _entry), Tracepoint(EXIT, _exit)),
    levels=(Level.WARP, Level.THREAD),
    maps=(MapKind.ARRAY, MapKind.RING),
    packed=PACKED,
    unpack=unpack,
)


@dataclass(frozen=True)
class SmStats:
    """Per-SM arrays, one entry per SM id that ran a block (ids need not be dense)."""

    sm: np.ndarray
    blocks: np.ndarray  # blocks run
    concurrency: np.ndarray  # most blocks resident at once
    first_start: np.ndarray  # ns since kernel start
    last_end: np.ndarray
    exec_ns: np.ndarray  # summed block durations
    sched_ns: np.ndarray  # summed waits between a slot freeing and the next block starting
    busy_ns: np.ndarray  # time with at least one block resident


@dataclass(frozen=True)
class Schedule:
    """The per-SM block schedule of one kernel launch. Times are ns since kernel start."""

    duration_ns: int
    blocks: int
    sms: int
    block: np.ndarray  # per block, sorted by (SM, start): linear block id
    smid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    wave: np.ndarray  # rank on its SM // that SM's concurrency
    per_sm: SmStats
    duration_pct: dict[int, float]  # block duration percentiles (50, 90, 99, 100)
    tail_ns: int  # from the first SM going idle for good to the kernel's end
    tail_frac: float


def warps(records: np.ndarray) -> np.ndarray:
    """One row per (kernel, block, warp): earliest start, latest end, summed clocks."""
    keys = records[["kernel", "block", "warp"]]
    uniq, inv = np.unique(keys, return_inverse=True)
    out = np.zeros(len(uniq), dtype=RECORD)
    for name in ("kernel", "block", "warp"):
        out[name] = uniq[name]
    out["start_ns"] = np.iinfo(np.uint64).max
    np.minimum.at(out["start_ns"], inv, records["start_ns"])
    np.maximum.at(out["end_ns"], inv, records["end_ns"])
    np.maximum.at(out["clocks"], inv, records["clocks"])
    out["smid"][inv] = records["smid"]
    return out


def analyse(records: np.ndarray, kernel: int | None = None) -> Schedule:
    """Build the schedule from block_sched records (of one kernel id when given).

    Blocks are sorted by (SM, start) and each SM's statistics are computed from its own
    slice of fresh arrays: SM ids need not be dense, and no SM's block list can alias
    another's (the ``[[]] * n_sms`` pitfall of per-SM Python lists).

    Raises:
        ValueError: when there are no records.
    """
    if kernel is not None:
        records = records[records["kernel"] == kernel]
    if len(records) == 0:
        raise ValueError("no block_sched records")
    w = warps(records)
    blk, inv = np.unique(w["block"], return_inverse=True)
    t0 = int(w["start_ns"].min())
    start = np.full(len(blk), np.iinfo(np.int64).max, dtype=np.int64)
    end = np.zeros(len(blk), dtype=np.int64)
    np.minimum.at(start, inv, w["start_ns"].astype(np.int64) - t0)
    np.maximum.at(end, inv, w["end_ns"].astype(np.int64) - t0)
    smid = np.zeros(len(blk), dtype=np.int64)
    smid[inv] = w["smid"]
    order = np.lexsort((start, smid))  # by SM, then by start within each SM
    blk, smid, start, end = blk[order], smid[order], start[order], end[order]
    sms, first = np.unique(smid, return_index=True)
    bounds = [*first[1:], len(smid)]
    wave = np.zeros(len(blk), dtype=np.int64)
    stats: dict[str, list[int]] = {k: [] for k in SmStats.__dataclass_fields__ if k != "sm"}
    for lo, hi in zip(first, bounds, strict=True):
        s, e = start[lo:hi], end[lo:hi]
        conc = _concurrency(s, e)
        wave[lo:hi] = np.arange(hi - lo) // conc
        stats["blocks"].append(hi - lo)
        stats["concurrency"].append(conc)
        stats["first_start"].append(int(s[0]))
        stats["last_end"].append(int(e.max()))
        stats["exec_ns"].append(int((e - s).sum()))
        stats["sched_ns"].append(_sched(s, e))
        stats["busy_ns"].append(_union(s, e))
    per_sm = SmStats(sms, *(np.asarray(v, dtype=np.int64) for v in stats.values()))
    duration = int(end.max())
    idle_from = int(per_sm.last_end.min())
    pct = {p: float(np.percentile(end - start, p)) for p in (50, 90, 99, 100)}
    return Schedule(
        duration_ns=duration,
        blocks=len(blk),
        sms=len(sms),
        block=blk,
        smid=smid,
        start=start,
        end=end,
        wave=wave,
        per_sm=per_sm,
        duration_pct=pct,
        tail_ns=duration - idle_from,
        tail_frac=(duration - idle_from) / duration if duration else 0.0,
    )


def _concurrency(start: np.ndarray, end: np.ndarray) -> int:
    """Most intervals open at once (an end at t closes before a start at t opens)."""
    events = np.concatenate(
        [np.stack([end, np.zeros_like(end)], 1), np.stack([start, np.ones_like(start)], 1)]
    )
    events = events[np.lexsort((events[:, 1], events[:, 0]))]
    return max(1, int(np.cumsum(np.where(events[:, 1] == 1, 1, -1)).max()))


def _sched(start: np.ndarray, end: np.ndarray) -> int:
    """Sum over blocks of (start - latest end at or before it on the SM); the first
    blocks of the SM wait from kernel start (0)."""
    ends = np.sort(end)
    idx = np.searchsorted(ends, start, side="right") - 1
    prev = np.where(idx >= 0, ends[np.maximum(idx, 0)], 0)
    return int((start - prev).sum())


def _union(start: np.ndarray, end: np.ndarray) -> int:
    order = np.argsort(start)
    total, cur_s, cur_e = 0, None, None
    for s, e in zip(start[order], end[order], strict=True):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return int(total)


def _view(records: np.ndarray | None, launch: LaunchInfo | None) -> Schedule | None:
    return None if records is None else analyse(records)


ENTRY = Entry(PROBE, "start_ns", "b", "s", "schedule", "SM schedule", _view)
