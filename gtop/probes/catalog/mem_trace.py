"""mem_trace: global memory accesses, 1 in N per thread, for the DMAT.

Sampling: each thread counts its accesses from a hashed phase and records those where
the count is 1 modulo N, so about 1 in N accesses are kept, spread over threads and time.

Sites: ``ld.global*``, ``st.global*``, generic ``ld``/``st`` (kept only where
``isspacep.global`` holds at run time), ``cp.async`` (4/8/16-byte) and ``cp.async.bulk``
copies between global and shared memory, and ``wmma.load``/``wmma.store`` of global (or
generic) memory. Per sampled access: address, ``%globaltimer``, ``%clock64``, width in
bytes, SM id, load or store, kernel id. Thread-level ring.

``wmma.load``/``wmma.store`` are warp-collective: every lane passes the tile's base
address, so they are recorded once per warp (its lowest sampled lane) with the tile's
base address and its whole size as the width (rows × columns × element size).

TMA tensor copies (``cp.async.bulk.tensor``, ``cp.async.bulk.prefetch.tensor``) are not
traced: their operands are a tensor map (an opaque 128-byte descriptor, whose layout
NVIDIA does not document) and box coordinates, so the global addresses they touch cannot
be computed in the kernel; recording the descriptor's address instead would put rows of
descriptor pages, not data, into the DMAT. They are counted per kernel in the module
header instead (``untraced_tensor_copy`` sites), so a DMAT without them says so.

``.func`` device functions: their accesses are traced too, with the function's own id in
the ``kernel`` field (the module header lists functions after the kernels), so the views
say "via FUNC" rather than naming the calling kernel, which a ``.func`` cannot know. Each
call sets up its own ring constants and its own sampling counter (a ``.func`` cannot see
its caller's registers); with sampling, the counter's phase mixes the thread's hash with
``%clock``, so that a function called many times with few accesses per call does not
always sample the same threads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..engine import maps
from ..engine.probe import ENTRY, Level, MapKind, Probe, Site, SiteError, Tracepoint
from ..engine.ptx import Instruction
from ..entry import Entry, LaunchInfo

RECORD = np.dtype(
    [
        ("addr", "<u8"),
        ("time_ns", "<u8"),
        ("clock", "<u8"),
        ("width", "<u4"),
        ("smid", "<u2"),
        ("is_store", "u1"),
        ("kernel", "u1"),
    ]
)

SITES = (
    r"^((ld|st)(?!\S*\.(param|shared|local|const|tex)\b)\.|"
    r"wmma\.(load|store)(?!\S*\.shared)\.|"
    r"cp\.async\.(ca|cg)\.shared|cp\.async\.bulk\.(shared|global))"
)
TENSOR_COPIES = r"^cp\.async\.bulk(\.prefetch)?\.tensor"
_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)")
_ELEMENT_BITS = {
    "f16": 16,
    "bf16": 16,
    "f32": 32,
    "tf32": 32,
    "f64": 64,
    "s32": 32,
    "s8": 8,
    "u8": 8,
    "s4": 4,
    "u4": 4,
    "b1": 1,
}
_TYPE = re.compile(r"(?:b|s|u|f|bf)(8|16|32|64|128)(x2)?")
_ADDR = re.compile(r"\[\s*([%A-Za-z_$][\w$]*)\s*(?:\+\s*(-?\s*\w+))?\s*\]")


def access(instr: Instruction) -> tuple[str, str, bool]:
    """(address operand, width: register or immediate, is_store) of an access site."""
    if instr.root == "wmma":
        is_store = instr.parts[1] == "store"
        return instr.operands[0 if is_store else 1], str(_tile_bytes(instr)), is_store
    if instr.root == "st":
        return instr.operands[0], str(_width(instr)), True
    if instr.root == "ld":
        return instr.operands[1], str(_width(instr)), False
    # cp.async[.bulk] [dst], [src], size ...: global is the source unless the copy
    # goes global <- shared (cp.async.bulk.global.shared::cta).
    is_store = instr.opcode.startswith("cp.async.bulk.global")
    return instr.operands[0 if is_store else 1], instr.operands[2], is_store


def _tile_bytes(instr: Instruction) -> int:
    """Bytes of a ``wmma.load``/``wmma.store`` tile: ``a`` is m×k, ``b`` k×n, ``c``/``d``
    m×n elements of the instruction's type.

    Raises:
        SiteError: no shape or element type in the opcode.
    """
    shape = next((m for p in instr.parts if (m := _SHAPE.fullmatch(p))), None)
    bits = next((_ELEMENT_BITS[p] for p in reversed(instr.parts) if p in _ELEMENT_BITS), 0)
    if shape is None or not bits:
        raise SiteError(f"no wmma shape or element type in {instr.opcode}")
    m, n, k = (int(v) for v in shape.groups())
    rows, cols = {"a": (m, k), "b": (k, n)}.get(instr.parts[2], (m, n))
    return rows * cols * bits // 8


def _width(instr: Instruction) -> int:
    """Bytes moved: vector lanes times the element type's size (``.v4.b32`` -> 16)."""
    lanes, size = 1, 0
    for part in instr.parts:
        if part.startswith("v") and part[1:].isdigit():
            lanes = int(part[1:])
        elif m := _TYPE.fullmatch(part):
            size = int(m.group(1)) // 8 * (2 if m.group(2) else 1)
    return lanes * size


def _address(operand: str) -> str:
    m = _ADDR.fullmatch(operand.strip())
    if not m:
        raise SiteError(f"unsupported address operand {operand!r}")
    base, offset = m.group(1), (m.group(2) or "0").replace(" ", "")
    first = f"mov.u64 %gtop_mt_a, {base};\n"
    return first + f"add.s64 %gtop_mt_a, %gtop_mt_a, {offset};\n"


def _phase(site: Site, mix_clock: bool) -> str:
    """Start the thread's access counter at a hashed phase in [0, N) (0 without sampling);
    ``mix_clock`` adds ``%clock`` to the hash."""
    if site.sample == 1:
        return "mov.u32 %gtop_mt_n, 0;\n"
    return (
        maps.ids(site)
        + "mad.lo.u32 %gtop_x, %gtop_blk, 1024, %gtop_tid;\n"
        + "mul.lo.u32 %gtop_x, %gtop_x, 2654435761;\n"
        + ("mov.u32 %gtop_y, %clock;\nadd.u32 %gtop_x, %gtop_x, %gtop_y;\n" if mix_clock else "")
        + f"rem.u32 %gtop_mt_n, %gtop_x, {site.sample};\n"
    )


def _entry(site: Site) -> str:
    """Start each thread's access counter at a hashed phase in [0, N), so that threads
    with fewer than N accesses sample different positions instead of all their first."""
    return _phase(site, mix_clock=False)


def _func_entry(site: Site) -> str:
    """The sampling counter of one call of a ``.func`` (see the module docstring)."""
    return _phase(site, mix_clock=True)


def _site(site: Site) -> str:
    assert site.instr is not None
    operand, width, is_store = access(site.instr)
    generic = site.instr.root in ("ld", "st", "wmma") and "global" not in site.instr.parts
    # a warp-collective tile access is recorded once per warp
    level = Level.WARP if site.instr.root == "wmma" else site.level
    sample = ""
    if site.sample > 1:
        sample = (
            "@%gtop_g add.u32 %gtop_mt_n, %gtop_mt_n, 1;\n"
            f"rem.u32 %gtop_x, %gtop_mt_n, {site.sample};\n"
            "setp.eq.and.u32 %gtop_g, %gtop_x, 1, %gtop_g;\n"
        )
    global_only = (
        "isspacep.global %gtop_mt_sp, %gtop_mt_a;\nand.pred %gtop_g, %gtop_g, %gtop_mt_sp;\n"
    )
    return (
        _address(operand)
        + (global_only if generic else "")
        + sample
        + maps.writer(level)
        + "@%gtop_lead mov.u64 %gtop_mt_t, %globaltimer;\n"
        + "@%gtop_lead mov.u64 %gtop_mt_c, %clock64;\n"
        + maps.slot(site, RECORD)
        + "mov.u32 %gtop_smid, %smid;\n"
        + f"mov.u32 %gtop_y, {width};\n"
        + f"mov.u32 %gtop_z, {int(is_store)};\n"
        + f"mov.u32 %gtop_x, {site.kernel_id};\n"
        + maps.store(
            RECORD,
            {
                "addr": "%gtop_mt_a",
                "time_ns": "%gtop_mt_t",
                "clock": "%gtop_mt_c",
                "width": "%gtop_y",
                "smid": "%gtop_smid",
                "is_store": "%gtop_z",
                "kernel": "%gtop_x",
            },
        )
    )


PROBE = Probe(
    name="mem_trace",
    doc="per global access (1 in N per thread): address, time, width, load/store",
    record=RECORD,
    registers={
        "%gtop_mt_n": ".b32",
        "%gtop_mt_sp": ".pred",
        "%gtop_mt_a": ".b64",
        "%gtop_mt_t": ".b64",
        "%gtop_mt_c": ".b64",
    },
    tracepoints=(
        Tracepoint(ENTRY, _entry),
        Tracepoint(SITES, _site, name="access"),
        Tracepoint(TENSOR_COPIES, _site, name="untraced_tensor_copy", count_only=True),
    ),
    levels=(Level.THREAD, Level.WARP),
    maps=(MapKind.RING,),
    sampled=True,
    func_entry=_func_entry,
)


PAGE = 64 * 1024


@dataclass(frozen=True)
class Dmat:
    """Densified memory access timeline: ``counts[t, r]`` = accesses in time bin ``t`` to
    the ``r``-th touched 64 KiB page (untouched pages are left out: densified)."""

    counts: np.ndarray  # (time bins, pages) int64
    pages: np.ndarray  # page number (address // PAGE) of each row, ascending
    labels: list[str]  # per row: kernel argument holding the page, or ""
    t_lo: int
    t_hi: int  # bins cover [t_lo, t_hi)
    align: str  # "global" (ns on %globaltimer) or "sm_clock" (cycles since each SM's first)
    unit: str  # "ns" or "cycles"


def timeline(records: np.ndarray, align: str = "global") -> np.ndarray:
    """Each record's time: ``%globaltimer`` ns since the first access ("global"), or
    ``%clock64`` cycles since its SM's first access ("sm_clock": per-SM clocks are not
    synchronised, so each SM is normalised on its own).

    Raises:
        ValueError: for an unknown alignment.
    """
    if align == "global":
        t = records["time_ns"].astype(np.int64)
        return t - t.min() if len(t) else t
    if align == "sm_clock":
        c = records["clock"].astype(np.int64)
        sms, inv = np.unique(records["smid"], return_inverse=True)
        first = np.full(len(sms), np.iinfo(np.int64).max)
        np.minimum.at(first, inv, c)
        return c - first[inv]
    raise ValueError(f"unknown time alignment {align!r} (global, sm_clock)")


def dmat(
    records: np.ndarray,
    bins: int,
    align: str = "global",
    window: tuple[int, int] | None = None,
    pointers: dict[str, tuple[int, int]] | None = None,
) -> Dmat:
    """Bin accesses into ``bins`` time bins by touched pages, optionally within a time
    ``window`` (zoom), labelling pages with ``pointers`` (argument -> (address, bytes))."""
    t = timeline(records, align)
    lo, hi = window if window else (0, int(t.max()) + 1 if len(t) else 1)
    keep = (t >= lo) & (t < hi)
    t, rec = t[keep], records[keep]
    page = (rec["addr"] // PAGE).astype(np.int64)
    pages, row = np.unique(page, return_inverse=True)
    col = ((t - lo) * bins // max(hi - lo, 1)).astype(np.int64)
    counts = np.zeros((bins, len(pages)), dtype=np.int64)
    np.add.at(counts, (col, row), 1)
    labels = [""] * len(pages)
    for name, (base, size) in (pointers or {}).items():
        inside = (pages >= base // PAGE) & (pages <= (base + max(size, 1) - 1) // PAGE)
        for r in np.flatnonzero(inside):
            labels[r] = labels[r] or name
    return Dmat(counts, pages, labels, lo, hi, align, "ns" if align == "global" else "cycles")


def notes(header: dict, kernel: str, records: np.ndarray | None = None) -> list[str]:
    """What a DMAT of ``kernel`` should say beside its cells, from the instrumented
    module's ``header``: accesses made inside ``.func`` bodies (by function, "via FUNC")
    and the kernel's TMA tensor copies that were not traced, with the reason."""
    out = []
    funcs = {int(f["kernel_id"]): f["name"] for f in header.get("functions", [])}
    if funcs and records is not None and len(records):
        ids, counts = np.unique(records["kernel"], return_counts=True)
        for fid, n in zip(ids.tolist(), counts.tolist(), strict=True):
            if fid in funcs:
                out.append(f"{n:,} accesses via {funcs[fid]}")
    kernels = header.get("kernels", [])
    for k in kernels:
        if k.get("name") == kernel or len(kernels) == 1:
            copies = int(k.get("sites", {}).get("untraced_tensor_copy", 0))
            if copies:
                out.append(
                    f"{copies} TMA tensor-copy sites not traced "
                    "(their addresses come from an opaque tensor map)"
                )
            break
    return out


@dataclass(frozen=True)
class Accesses:
    """What the DMAT view draws of one launch: its sampled accesses, the kernel's
    argument buffers (name -> (address, bytes), for page labels) and notes."""

    records: np.ndarray | None
    pointers: dict[str, tuple[int, int]]
    notes: list[str]


def _view(records: np.ndarray | None, launch: LaunchInfo | None) -> Accesses:
    if launch is None:
        return Accesses(records, {}, [])
    return Accesses(records, dict(launch.pointers), notes(launch.header, launch.kernel, records))


ENTRY = Entry(PROBE, "time_ns", "m", "m", "dmat", "DMAT", _view, capacity=1 << 20, sample=64)
