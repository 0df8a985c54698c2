"""tensorop: tensor-core instructions per warp, by shape and type.

Counted sites: ``mma.sync``, ``wmma.mma.sync`` and Hopper's ``wgmma.mma_async``; a
kernel's classes (e.g. ``wgmma.m64n128k16.f32.f16.f16``) are listed in the instrumented
module's header, in index order. ``count[k]`` is the instructions of class ``k`` the warp
issued. ``cycles[k]``:

- synchronous ``mma.sync``/``wmma.mma.sync``: ``%clock`` around each instruction, summed;
- asynchronous ``wgmma.mma_async``: not timed one by one (their issue says nothing about
  their work, and clock reads between them cost more than the count): a *span* opens at
  a wgmma issued while none is open (the first after a ``wgmma.wait_group``) and closes
  at the end of the next ``wgmma.wait_group``; its cycles go to the class of the wgmma
  that opened it (only the first wgmma of a straight run can open one).
  ``cycles[k] / count[k]`` is then the issue-to-wait time per instruction, which
  includes the tensor cores' work on it.
  A run of wgmmas is counted at its first (``Site.run``).

Inside a kernel every clock read is the 32-bit ``%clock`` (a span, a wait or an mma is
taken to last under 2^32 cycles); sums are 64-bit. Each clock read in a loop like
flash attention's costs it about 1% on an H100, whether or not it runs (one predicated
off costs the same), so a wgmma span takes two reads and a ``wgmma.wait_group`` none of
its own: waits are counted (``wait_count``), and their end closes the span, but the
time inside them is not measured separately (``benchmarks/RESULTS.md``, fifth probe
run).

One record per warp at kernel exit, only from warps that issued any tensor-core
instruction or waited for one (in a fixed slot per (block, warp) by default); a kernel
without any tensor-core instruction gets no probe code at all. Timeline:
``first_clock``/``last_clock`` (first issue, end of the last instruction or wait; 0:
none) are the full ``%clock64`` values, rebuilt at exit from their low 32 bits (exact
when they lie within 2^32 cycles of the exit), and mapped to ``%globaltimer`` through
``exit_clock``/``exit_ns`` of the same warp.

``.func`` device functions: a function's sites count in its own registers during each
call, and at each of its ``ret``s it adds them into its warp's array slot with atomics
(``red.global.add`` for counts and cycles, min/max for first/last clock), since a
``.func`` cannot reach its caller's registers. Classes are then numbered module-wide, so
that kernels and functions agree on each index. In such a module every kernel that
may call the function writes its part with atomics too (``Site.adds``), so the two never
race, and every warp that reaches a kernel exit writes its record's header (exit time,
block, SM, warp, kernel): the kernel cannot tell whether its callees issued tensor ops,
so records with zero counts appear for warps that issued none. The ring map cannot take
.func sites (a ring slot is claimed per record, so no function can find its warp's).
A wgmma span cannot cross a call: each ``.func`` call opens and closes its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..engine import maps
from ..engine.probe import ENTRY, EXIT, Level, MapKind, Probe, Site, Tracepoint
from ..engine.ptx import Instruction
from ..entry import Entry, LaunchInfo

MAX_CLASSES = 6

RECORD = np.dtype(
    [
        ("exit_ns", "<u8"),
        ("exit_clock", "<u8"),
        ("first_clock", "<u8"),  # issue of the warp's first tensor-core instruction (0: none)
        ("last_clock", "<u8"),  # completion of its last one (or of its last wait_group)
        ("block", "<u4"),
        ("smid", "<u2"),
        ("warp", "u1"),
        ("kernel", "u1"),
        ("wait_count", "<u4"),
        ("pad", "<u4", (3,)),  # to 128 bytes: records are written with 16-byte stores
        ("count", "<u4", (MAX_CLASSES,)),
        ("cycles", "<u8", (MAX_CLASSES,)),
    ]
)

_MMA = r"^(mma\.sync|wmma\.mma\.sync|wgmma\.mma_async)"
_WAIT = r"^wgmma\.wait_group"
_DROP = {"sync", "aligned", "mma_async", "row", "col", "satfinite", "sp"}


def classify(instr: Instruction) -> str | None:
    """``wgmma.m64n128k16.f32.f16.f16``-style key: kind, shape and types of a site."""
    if not re.match(_MMA, instr.opcode):
        return None
    kind = "wgmma" if instr.root == "wgmma" else instr.root
    rest = [p for p in instr.parts[1:] if p not in _DROP and p != "mma"]
    return ".".join([kind, *rest])


def _entry(site: Site) -> str:
    lines = [
        "mov.u32 %gtop_tc_fl, 0;",
        "mov.u32 %gtop_tc_ll, 0;",
        "mov.u32 %gtop_tc_wn, 0;",
        "mov.u32 %gtop_tc_iss, 0;",
        "mov.pred %gtop_tc_h, 0;",
        "mov.pred %gtop_tc_o, 0;",
    ]
    for k in range(MAX_CLASSES):
        lines += [
            f"mov.u32 %gtop_tc_n{k}, 0;",
            f"mov.u64 %gtop_tc_c{k}, 0;",
            f"mov.pred %gtop_tc_p{k}, 0;",
        ]
    return "\n".join(lines) + "\n"


def _first(clock: str) -> str:
    """The low half of ``first_clock`` = ``clock`` on the warp's first tensor-core
    instruction (``%gtop_tc_h``: it is set)."""
    return (
        f"selp.u32 %gtop_tc_fl, %gtop_tc_fl, {clock}, %gtop_tc_h;\n"
        "or.pred %gtop_tc_h, %gtop_tc_h, %gtop_g;\n"
    )


def _before(site: Site) -> str:
    assert site.instr is not None
    if site.instr.root == "wgmma":
        k = site.cls
        if not site.run:  # counted by the first wgmma of its run
            return ""
        count = f"@%gtop_g add.u32 %gtop_tc_n{k}, %gtop_tc_n{k}, {site.run};\n"
        if site.follows:  # an earlier wgmma of this run already opened the span
            return count
        return (
            count
            + "mov.u32 %gtop_tc_s, %clock;\n"
            + _first("%gtop_tc_s")
            + "not.pred %gtop_tc_f, %gtop_tc_o;\n"
            + "and.pred %gtop_tc_f, %gtop_tc_f, %gtop_g;\n"
            + f"or.pred %gtop_tc_p{k}, %gtop_tc_p{k}, %gtop_tc_f;\n"
            + "selp.u32 %gtop_tc_iss, %gtop_tc_iss, %gtop_tc_s, %gtop_tc_o;\n"
            + "or.pred %gtop_tc_o, %gtop_tc_o, %gtop_g;\n"
        )
    if site.follows:  # an earlier site of this basic block already set first_clock
        return "mov.u32 %gtop_tc_e, %clock;\n"
    return "mov.u32 %gtop_tc_e, %clock;\n" + _first("%gtop_tc_e")


def _after_mma(site: Site) -> str:
    assert site.instr is not None
    if site.instr.root == "wgmma":
        return ""  # counted before; its span closes at a wait_group
    k = site.cls
    return (
        "mov.u32 %gtop_tc_d, %clock;\n"
        "sub.u32 %gtop_tc_s, %gtop_tc_d, %gtop_tc_e;\n"
        "cvt.u64.u32 %gtop_tc_t, %gtop_tc_s;\n"
        f"@%gtop_g add.u64 %gtop_tc_c{k}, %gtop_tc_c{k}, %gtop_tc_t;\n"
        f"@%gtop_g add.u32 %gtop_tc_n{k}, %gtop_tc_n{k}, 1;\n"
        "@%gtop_g mov.u32 %gtop_tc_ll, %gtop_tc_d;\n"
    )


def _after_wait(site: Site) -> str:
    """Count the wait, then close the open wgmma span (if any) into its class."""
    text = (
        "mov.u32 %gtop_tc_d, %clock;\n"
        "@%gtop_g add.u32 %gtop_tc_wn, %gtop_tc_wn, 1;\n"
        "@%gtop_g mov.u32 %gtop_tc_ll, %gtop_tc_d;\n"
        "sub.u32 %gtop_tc_s, %gtop_tc_d, %gtop_tc_iss;\n"
    )
    wgmma = [k for k, key in enumerate(site.classes) if key.startswith("wgmma")]
    for k in wgmma:
        # one wgmma class: its span is open when any is (its p_k is then never read)
        pred = "%gtop_tc_o" if len(wgmma) == 1 else f"%gtop_tc_p{k}"
        text += f"and.pred %gtop_tc_f, {pred}, %gtop_g;\n"
        text += "selp.u32 %gtop_tc_e, %gtop_tc_s, 0, %gtop_tc_f;\n"
        text += "cvt.u64.u32 %gtop_tc_t, %gtop_tc_e;\n"
        text += f"add.u64 %gtop_tc_c{k}, %gtop_tc_c{k}, %gtop_tc_t;\n"
        if len(wgmma) > 1:
            text += f"@%gtop_g mov.pred %gtop_tc_p{k}, 0;\n"
    return text + "@%gtop_g mov.pred %gtop_tc_o, 0;\n"


def _widen() -> str:
    """``%gtop_tc_first``/``%gtop_tc_last``: the full ``%clock64`` of the first issue and
    of the last end, from their low halves and the exit's ``%gtop_tc_u`` (0: none)."""
    text = "cvt.u32.u64 %gtop_tc_s, %gtop_tc_u;\n"
    for low, full in (("%gtop_tc_fl", "%gtop_tc_first"), ("%gtop_tc_ll", "%gtop_tc_last")):
        text += (
            f"sub.u32 %gtop_tc_d, %gtop_tc_s, {low};\n"
            f"cvt.u64.u32 {full}, %gtop_tc_d;\n"
            f"sub.u64 {full}, %gtop_tc_u, {full};\n"
        )
    return text + (
        "selp.u64 %gtop_tc_first, %gtop_tc_first, 0, %gtop_tc_h;\n"
        "setp.ne.or.u32 %gtop_tc_f, %gtop_tc_wn, 0, %gtop_tc_h;\n"
        "selp.u64 %gtop_tc_last, %gtop_tc_last, 0, %gtop_tc_f;\n"
    )


_EXIT_VALUES = {
    "exit_ns": "%gtop_tc_t",
    "exit_clock": "%gtop_tc_u",
    "first_clock": "%gtop_tc_first",
    "last_clock": "%gtop_tc_last",
    "block": "%gtop_blk",
    "smid": "%gtop_smid",
    "warp": "%gtop_wid",
    "kernel": "%gtop_x",
    "wait_count": "%gtop_tc_wn",
}
for _k in range(MAX_CLASSES):
    _EXIT_VALUES[f"count[{_k}]"] = f"%gtop_tc_n{_k}"
    _EXIT_VALUES[f"cycles[{_k}]"] = f"%gtop_tc_c{_k}"
_HEADER = ("exit_ns", "exit_clock", "block", "smid", "warp", "kernel")


def _add(pred: str = "%gtop_ok") -> str:
    """Add the warp's counters into its slot at ``%gtop_a`` with atomics (``pred``
    lanes only), skipping zeros: counts, cycles, waits, then the first/last clocks (the
    first with a compare-and-swap from 0, so that 0 keeps meaning "none")."""
    text = ""
    counters = [("wait_count", "%gtop_tc_wn", "u32")]
    for k in range(MAX_CLASSES):
        counters += [(f"count[{k}]", f"%gtop_tc_n{k}", "u32")]
        counters += [(f"cycles[{k}]", f"%gtop_tc_c{k}", "u64")]
    for name, reg, t in counters:
        text += f"setp.ne.and.{t} %gtop_tc_f, {reg}, 0, {pred};\n"
        at = maps.field_at(RECORD, name)[0]
        text += f"@%gtop_tc_f red.global.add.{t} [%gtop_a+{at}], {reg};\n"
    first, last = maps.field_at(RECORD, "first_clock")[0], maps.field_at(RECORD, "last_clock")[0]
    return text + (
        f"setp.ne.and.u64 %gtop_tc_f, %gtop_tc_first, 0, {pred};\n"
        f"@%gtop_tc_f atom.global.cas.b64 %gtop_w0, [%gtop_a+{first}], 0, %gtop_tc_first;\n"
        f"@%gtop_tc_f red.global.min.u64 [%gtop_a+{first}], %gtop_tc_first;\n"
        f"setp.ne.and.u64 %gtop_tc_f, %gtop_tc_last, 0, {pred};\n"
        f"@%gtop_tc_f red.global.max.u64 [%gtop_a+{last}], %gtop_tc_last;\n"
    )


def _lead(site: Site, issued_only: bool) -> str:
    """Ids and the writing lane (``%gtop_lead``); ``issued_only``: of warps that issued a
    tensor-core instruction or waited for one (a first clock set or a wait count) only."""
    gate = (
        "setp.ne.or.u32 %gtop_tc_f, %gtop_tc_wn, 0, %gtop_tc_h;\n"
        "and.pred %gtop_g, %gtop_g, %gtop_tc_f;\n"
        if issued_only
        else ""
    )
    return gate + maps.ids(site) + maps.writer(site.level)


def _func_exit(site: Site) -> str:
    """At a ``.func``'s ret: add this call's counters into the warp's array slot."""
    return (
        _lead(site, issued_only=True)
        + "mov.u64 %gtop_tc_u, %clock64;\n"
        + _widen()
        + maps.slot(site, RECORD, count_drops=False)
        + _add()
    )


def _exit(site: Site) -> str:
    """Warps that issued no tensor-core instruction write nothing (unless the module's
    functions add into the records: see the module docstring)."""
    return (
        _lead(site, issued_only=not site.adds)
        + "mov.u64 %gtop_tc_t, %globaltimer;\n"
        + "mov.u64 %gtop_tc_u, %clock64;\n"
        + _widen()
        + maps.slot(site, RECORD)
        + (_add() if site.adds else "")
        + f"mov.u32 %gtop_x, {site.kernel_id};\n"
        + maps.store(RECORD, {k: _EXIT_VALUES[k] for k in _HEADER} if site.adds else _EXIT_VALUES)
    )


_REGISTERS = {
    "%gtop_tc_f": ".pred",
    "%gtop_tc_t": ".b64",
    "%gtop_tc_u": ".b64",
    "%gtop_tc_first": ".b64",  # first_clock and last_clock, widened at exit
    "%gtop_tc_last": ".b64",
    "%gtop_tc_fl": ".b32",  # their low halves, kept while the kernel runs
    "%gtop_tc_ll": ".b32",
    "%gtop_tc_wn": ".b32",
    "%gtop_tc_iss": ".b32",  # %clock at the issue of the open wgmma span
    "%gtop_tc_o": ".pred",  # a wgmma span is open
    "%gtop_tc_h": ".pred",  # first_clock is set
    "%gtop_tc_e": ".b32",  # %clock before an mma.sync; a closing span's cycles
    "%gtop_tc_d": ".b32",  # %clock after an mma.sync or a wait_group
    "%gtop_tc_s": ".b32",  # the span's or mma's cycles
}
for _k in range(MAX_CLASSES):
    _REGISTERS[f"%gtop_tc_n{_k}"] = ".b32"
    _REGISTERS[f"%gtop_tc_c{_k}"] = ".b64"
    _REGISTERS[f"%gtop_tc_p{_k}"] = ".pred"  # a wgmma span of class k is open

PROBE = Probe(
    name="tensorop",
    doc="per warp: count and cycles of mma/wgmma by shape and type, wgmma waits",
    record=RECORD,
    registers=_REGISTERS,
    tracepoints=(
        Tracepoint(ENTRY, _entry),
        Tracepoint(_MMA, _before, name="mma", breaks=_WAIT),
        Tracepoint(_MMA, _after_mma, after=True, name="mma_end"),
        Tracepoint(_WAIT, _after_wait, after=True, name="wait_end"),
        Tracepoint(EXIT, _exit),
    ),
    levels=(Level.WARP,),
    maps=(MapKind.ARRAY, MapKind.RING),
    classify=classify,
    max_classes=MAX_CLASSES,
    needs_sites=True,  # a kernel without tensor-core instructions runs untouched
    func_entry=_entry,
    func_exit=_func_exit,
)


@dataclass(frozen=True)
class ClassStats:
    """Totals of one instruction class over all warps."""

    count: int
    cycles: int  # summed cycles (per mma; per issue-to-wait span for wgmma)

    @property
    def cycles_per_op(self) -> float:
        return self.cycles / self.count if self.count else 0.0


@dataclass(frozen=True)
class TensorOps:
    """Tensor-core activity of one launch. Warp times are ns since the first warp's first
    tensor op, on %globaltimer (each warp's clocks are mapped through its own exit)."""

    per_class: dict[str, ClassStats]
    wait_count: int
    block: np.ndarray  # per warp with tensor ops, sorted by start
    warp: np.ndarray
    smid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    ops: np.ndarray  # tensor-core instructions issued by the warp
    span_ns: int


def analyse(records: np.ndarray, classes: list[str], kernel: int | None = None) -> TensorOps:
    """Summarise tensorop records; ``classes`` come from the instrumented module header."""
    if kernel is not None:
        records = records[records["kernel"] == kernel]
    per_class = {
        cls: ClassStats(int(records["count"][:, k].sum()), int(records["cycles"][:, k].sum()))
        for k, cls in enumerate(classes)
    }
    active = records[records["first_clock"] > 0]
    base = active["exit_ns"].astype(np.int64) - active["exit_clock"].astype(np.int64)
    start = base + active["first_clock"].astype(np.int64)
    end = base + active["last_clock"].astype(np.int64)
    t0 = int(start.min()) if len(start) else 0
    order = np.argsort(start, kind="stable")
    return TensorOps(
        per_class=per_class,
        wait_count=int(records["wait_count"].sum()),
        block=active["block"][order],
        warp=active["warp"][order],
        smid=active["smid"][order],
        start=(start - t0)[order],
        end=(end - t0)[order],
        ops=active["count"].sum(axis=1)[order],
        span_ns=int(end.max() - t0) if len(end) else 0,
    )


def _view(records: np.ndarray | None, launch: LaunchInfo | None) -> TensorOps | None:
    return None if records is None or launch is None else analyse(records, launch.classes())


ENTRY = Entry(PROBE, "exit_ns", "t", "t", "tensorops", "Tensor ops", _view)
