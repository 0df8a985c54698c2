"""PTX building blocks shared by probes: ids, the writing lane, record slots and stores,
and the host-side reader of the record buffer.

Module-scope variables (set by the host through ``cuModuleGetGlobal``). The settings a
launch only reads are ``.const`` (one constant-cache load, no global-memory round trip
on the probe's path); the counters that probes update are ``.global``:

- ``gtop_buf`` (.const .u64): device pointer of the record buffer (16-byte aligned);
- ``gtop_cap`` (.const .u32): capacity in records; 0 (the default) disarms the probe: nothing
  is written or counted, so an instrumented kernel can run unprobed between samples;
- ``gtop_stripes``, ``gtop_per`` (.const .u32): the ring is split into ``gtop_stripes``
  regions of ``gtop_per`` records, one per SM (``%smid`` modulo the stripe count), so
  that warps claim slots on per-SM counters instead of one hot global counter;
- ``gtop_slot`` (.global .u32[MAX_STRIPES]): records claimed per stripe (those past
  ``gtop_per`` were dropped);
- ``gtop_overflow`` (.global .u32): array-map records dropped for an index past the capacity;
- ``gtop_launch`` (.global .u32[4]), for a probe whose array map stores a packed record
  (:attr:`~.probe.Probe.packed`): the warp of slot 0 writes the probe's launch word
  (e.g. the kernel id), the records per block and the blocks in the grid, from which
  the host derives each slot's block and warp and the records past the capacity (so
  that no warp runs the ``gtop_overflow`` atomic, a branch and a warp reduction in SASS).
"""

from __future__ import annotations

import numpy as np

from .probe import Level, MapKind, Probe, Site

MAX_STRIPES = 1024
# in gtop_launch[0]: the launch's slots could not be indexed (a flat kernel, see
# ids(flat=True), on a launch with a y/z size above 1): every record counts as dropped
LAUNCH_SKIPPED = 0x200

# name -> (state space, type)
GLOBALS: dict[str, tuple[str, str]] = {
    "gtop_buf": (".const", ".u64"),
    "gtop_cap": (".const", ".u32"),
    "gtop_stripes": (".const", ".u32"),
    "gtop_per": (".const", ".u32"),
    "gtop_overflow": (".global", ".u32"),
    "gtop_slot": (".global", f".u32[{MAX_STRIPES}]"),
    "gtop_launch": (".global", ".u32[4]"),
}

REGISTERS: dict[str, str] = {
    "%gtop_g": ".pred",  # the site's guard, set by the rewriter
    "%gtop_lead": ".pred",  # this thread writes the record
    "%gtop_ok": ".pred",  # the record has a slot
    "%gtop_of": ".pred",  # the record overflowed (array map)
    "%gtop_wl": ".pred",  # this lane claims the ring slots of its warp
    "%gtop_x": ".b32",
    "%gtop_y": ".b32",
    "%gtop_z": ".b32",
    "%gtop_m": ".b32",
    "%gtop_b": ".b32",
    "%gtop_s": ".b32",
    "%gtop_r": ".b32",
    "%gtop_rcap": ".b32",  # ring constants, set once by ring_entry()
    "%gtop_rst": ".b32",
    "%gtop_rper": ".b32",
    "%gtop_rslot": ".b64",
    "%gtop_rbuf": ".b64",
    "%gtop_cap": ".b32",
    "%gtop_smid": ".b32",
    "%gtop_blk": ".b32",
    "%gtop_tid": ".b32",
    "%gtop_wid": ".b32",
    "%gtop_lo": ".b32",
    "%gtop_hi": ".b32",
    "%gtop_a": ".b64",
    "%gtop_w0": ".b64",
    "%gtop_w1": ".b64",
}


def alignment(name: str) -> int:
    """Bytes the global ``name`` is aligned to: 16 for ``gtop_launch`` (written with one
    ``st.global.v4.u32``, which faults on a misaligned address), else 8."""
    return 16 if name == "gtop_launch" else 8


def global_decls() -> list[str]:
    out = []
    for name, (space, t) in GLOBALS.items():
        kind, _, dims = t.partition("[")
        decl = f"{kind} {name}{'[' + dims if dims else ''}"
        out.append(f".visible {space} .align {alignment(name)} {decl};")
    return out


def ids(site: Site | None = None, flat: bool = False) -> str:
    """SM id, linear block id, linear thread id and warp-in-block id. With the kernel's
    ``.reqntid`` (``site.ntid``; Triton declares it) the block shape is a constant: a
    1-D block's linear thread id is ``%tid.x``, and no ``%ntid`` is read.

    ``flat`` (for a :attr:`~.probe.Site.flat` site): the block is ``%ctaid.x`` and the
    thread ``%tid.x``, and ``%gtop_of`` says whether the launch is really 1-D (every y/z
    size is 1; a few constant-bank reads): the ids are right only where it is set, so
    the caller must leave its record unwritten elsewhere."""
    if flat and site is not None and site.flat:
        # the y/z sizes (each >= 1) sum to their count only when all are 1
        sizes = ["%nctaid.y", "%nctaid.z"] + (["%ntid.y", "%ntid.z"] if site.ntid is None else [])
        text = """\
mov.u32 %gtop_smid, %smid;
mov.u32 %gtop_blk, %ctaid.x;
mov.u32 %gtop_tid, %tid.x;
shr.u32 %gtop_wid, %gtop_tid, 5;
mov.u32 %gtop_x, 0;
"""
        for reg in sizes:
            text += f"mov.u32 %gtop_y, {reg};\nadd.u32 %gtop_x, %gtop_x, %gtop_y;\n"
        return text + f"setp.eq.u32 %gtop_of, %gtop_x, {len(sizes)};\n"
    text = "mov.u32 %gtop_smid, %smid;\n" + _linear("%gtop_blk", "%ctaid", "%nctaid")
    ntid = site.ntid if site is not None else None
    if ntid is not None and ntid[1:] == (1, 1):
        text += "mov.u32 %gtop_tid, %tid.x;\n"
    elif ntid is not None:
        text += f"""\
mov.u32 %gtop_x, %tid.z;
mov.u32 %gtop_z, %tid.y;
mad.lo.u32 %gtop_tid, %gtop_x, {ntid[1]}, %gtop_z;
mov.u32 %gtop_y, %tid.x;
mad.lo.u32 %gtop_tid, %gtop_tid, {ntid[0]}, %gtop_y;
"""
    else:
        text += _linear("%gtop_tid", "%tid", "%ntid")
    return text + "shr.u32 %gtop_wid, %gtop_tid, 5;\n"


def _linear(dst: str, index: str, size: str) -> str:
    """Set ``dst`` to the row-major linear id ``(z * size.y + y) * size.x + x`` of the
    3-D special register ``index`` (``%ctaid``/``%tid``) in the grid or block of ``size``
    (``%nctaid``/``%ntid``), both read at run time."""
    return f"""\
mov.u32 %gtop_x, {index}.z;
mov.u32 %gtop_y, {size}.y;
mov.u32 %gtop_z, {index}.y;
mad.lo.u32 {dst}, %gtop_x, %gtop_y, %gtop_z;
mov.u32 %gtop_x, {size}.x;
mov.u32 %gtop_y, {index}.x;
mad.lo.u32 {dst}, {dst}, %gtop_x, %gtop_y;
"""


def writer(level: Level, unguarded: bool = False) -> str:
    """Set ``%gtop_lead``: the lowest guarded active lane (warp) or every guarded thread.
    ``unguarded``: ``%gtop_g`` is known true (the site's instruction has no guard and
    nothing changed it), so the active mask is the ballot."""
    if level is Level.THREAD:
        return "mov.pred %gtop_lead, %gtop_g;\n"
    if unguarded:
        return """\
activemask.b32 %gtop_b;
mov.u32 %gtop_x, %lanemask_lt;
and.b32 %gtop_x, %gtop_x, %gtop_b;
setp.eq.u32 %gtop_lead, %gtop_x, 0;
"""
    return """\
activemask.b32 %gtop_m;
vote.sync.ballot.b32 %gtop_b, %gtop_g, %gtop_m;
mov.u32 %gtop_x, %lanemask_lt;
and.b32 %gtop_x, %gtop_x, %gtop_b;
setp.eq.and.u32 %gtop_lead, %gtop_x, 0, %gtop_g;
"""


def per_block(level: Level, ntid: tuple[int, int, int] | None = None) -> str:
    """``%gtop_x`` = warps (or threads) per block (a constant with ``.reqntid``)."""
    if ntid is not None:
        threads = ntid[0] * ntid[1] * ntid[2]
        return f"mov.u32 %gtop_x, {(threads + 31) // 32 if level is Level.WARP else threads};\n"
    text = """\
mov.u32 %gtop_x, %ntid.x;
mov.u32 %gtop_y, %ntid.y;
mul.lo.u32 %gtop_x, %gtop_x, %gtop_y;
mov.u32 %gtop_y, %ntid.z;
mul.lo.u32 %gtop_x, %gtop_x, %gtop_y;
"""
    if level is Level.WARP:
        text += "add.u32 %gtop_x, %gtop_x, 31;\nshr.u32 %gtop_x, %gtop_x, 5;\n"
    return text


def ring_entry() -> str:
    """Per-launch ring constants, loaded once at kernel entry: capacity (0: disarmed),
    this SM's stripe, records per stripe, the stripe's counter and the buffer."""
    return """\
ld.const.u32 %gtop_rcap, [gtop_cap];
ld.const.u32 %gtop_x, [gtop_stripes];
mov.u32 %gtop_rst, %smid;
rem.u32 %gtop_rst, %gtop_rst, %gtop_x;
ld.const.u32 %gtop_rper, [gtop_per];
mov.u64 %gtop_rslot, gtop_slot;
mad.wide.u32 %gtop_rslot, %gtop_rst, 4, %gtop_rslot;
ld.const.u64 %gtop_rbuf, [gtop_buf];
"""


def slot(site: Site, record: np.dtype, count_drops: bool = True) -> str:
    """Claim a slot for each writing lane: sets ``%gtop_ok`` and ``%gtop_a`` (its address).
    A capacity of 0 means "not armed": no slot is claimed and nothing counts as dropped.

    Ring: one atomic per warp, on its SM's stripe counter, claims the slots of all its
    writing lanes (each takes the warp's base plus its rank); the host derives drops from
    the counters; needs :func:`ring_entry` at kernel entry. Array: the slot is (linear
    block, warp or thread); needs :func:`ids`; ``count_drops=False`` leaves an index
    past the capacity out of ``gtop_overflow`` (for code that adds into a slot that
    another snippet owns and counts).
    """
    size = record.itemsize
    if site.map is MapKind.RING:
        return f"""\
setp.ne.and.u32 %gtop_lead, %gtop_rcap, 0, %gtop_lead;
mov.u32 %gtop_s, 0;
activemask.b32 %gtop_m;
vote.sync.ballot.b32 %gtop_b, %gtop_lead, %gtop_m;
mov.u32 %gtop_x, %lanemask_lt;
and.b32 %gtop_x, %gtop_x, %gtop_b;
popc.b32 %gtop_r, %gtop_x;
popc.b32 %gtop_y, %gtop_b;
brev.b32 %gtop_z, %gtop_b;
clz.b32 %gtop_z, %gtop_z;
setp.eq.and.u32 %gtop_wl, %gtop_r, 0, %gtop_lead;
@%gtop_wl atom.global.add.u32 %gtop_s, [%gtop_rslot], %gtop_y;
shfl.sync.idx.b32 %gtop_s, %gtop_s, %gtop_z, 31, %gtop_m;
add.u32 %gtop_s, %gtop_s, %gtop_r;
setp.lt.and.u32 %gtop_ok, %gtop_s, %gtop_rper, %gtop_lead;
mad.lo.u32 %gtop_s, %gtop_rst, %gtop_rper, %gtop_s;
mad.wide.u32 %gtop_a, %gtop_s, {size}, %gtop_rbuf;
"""
    index = "%gtop_wid" if site.level is Level.WARP else "%gtop_tid"
    drops = (
        "setp.ge.and.u32 %gtop_of, %gtop_s, %gtop_cap, %gtop_lead;\n"
        "@%gtop_of red.global.add.u32 [gtop_overflow], 1;\n"
        if count_drops
        else ""
    )
    return (
        "ld.const.u32 %gtop_cap, [gtop_cap];\n"
        "setp.ne.and.u32 %gtop_lead, %gtop_cap, 0, %gtop_lead;\n"
        + per_block(site.level, site.ntid)
        + f"""\
mad.lo.u32 %gtop_s, %gtop_blk, %gtop_x, {index};
setp.lt.and.u32 %gtop_ok, %gtop_s, %gtop_cap, %gtop_lead;
{drops}ld.const.u64 %gtop_a, [gtop_buf];
mad.wide.u32 %gtop_a, %gtop_s, {size}, %gtop_a;
"""
    )


def field_at(record: np.dtype, key: str) -> tuple[int, int]:
    """(byte offset, size) of ``name`` or of element ``name[k]`` of a subarray field."""
    name, _, index = key.partition("[")
    dt, offset = record.fields[name][:2]
    if index:
        base = dt.base
        return offset + int(index.rstrip("]")) * base.itemsize, base.itemsize
    return offset, dt.itemsize


def store(record: np.dtype, values: dict[str, str]) -> str:
    """Write ``values`` (field or ``field[k]`` -> register) for ``%gtop_ok`` lanes, packed
    into 16-byte ``st.global.v2.u64`` stores where the layout allows (bytes of a written
    word that no value covers are written as zero).

    Raises:
        ValueError: a value that straddles an 8-byte word.
    """
    by_word: dict[int, list[tuple[int, int, str]]] = {}
    for key, reg in values.items():
        offset, size = field_at(record, key)
        if offset // 8 != (offset + size - 1) // 8:
            raise ValueError(f"field {key} straddles an 8-byte word")
        by_word.setdefault(offset // 8, []).append((offset % 8, size, reg))
    lines: list[str] = []
    for pair in sorted({w // 2 for w in by_word}):
        words = [w for w in (2 * pair, 2 * pair + 1) if w in by_word]
        regs = [_word(by_word[w], f"%gtop_w{w % 2}", lines) for w in words]
        if len(words) == 2:
            lines.append(
                f"@%gtop_ok st.global.v2.u64 [%gtop_a+{16 * pair}], {{{', '.join(regs)}}};"
            )
        else:
            lines.append(f"@%gtop_ok st.global.u64 [%gtop_a+{8 * words[0]}], {regs[0]};")
    return "\n".join(lines) + "\n"


def _word(parts: list[tuple[int, int, str]], tmp: str, lines: list[str]) -> str:
    """A 64-bit register holding one record word built from (offset, size, register)."""
    if len(parts) == 1 and parts[0][1] == 8:
        return parts[0][2]
    halves = []
    for half, name in ((0, "%gtop_lo"), (4, "%gtop_hi")):
        inside = [(o - half, n, r) for o, n, r in parts if half <= o < half + 4]
        if len(inside) == 1 and inside[0][:2] == (0, 4):
            halves.append(inside[0][2])
            continue
        lines.append(f"mov.b32 {name}, 0;")
        for o, n, r in inside:
            lines.append(f"bfi.b32 {name}, {r}, {name}, {8 * o}, {8 * n};")
        halves.append(name)
    lines.append(f"mov.b64 {tmp}, {{{halves[0]}, {halves[1]}}};")
    return tmp


def decode(
    record: np.dtype,
    ring: bool,
    slots: np.ndarray,
    per: int,
    overflow: int,
    buffer: np.ndarray,
    probe: Probe | None = None,
    launch: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Records and drops from host copies of the per-stripe claim counters (``slots``),
    the records per stripe, ``gtop_overflow`` and the record buffer (bytes).

    Ring: stripe ``i`` holds ``min(slots[i], per)`` records from record ``i * per``;
    claims past ``per`` are drops. Array: the slots that were written (not all zero).
    ``record`` is the layout in the buffer; when ``probe`` packs its array records
    (:attr:`~.probe.Probe.packed` is ``record``), they are unpacked into
    ``probe.record`` with the host copy of ``gtop_launch`` (``launch``: kernel id,
    records per block, blocks), which also gives the records past the capacity.
    """
    rows = np.asarray(buffer, dtype=np.uint8).reshape(-1, record.itemsize)
    if ring:
        kept = [rows[i * per : i * per + min(int(n), per)] for i, n in enumerate(slots)]
        rows = np.concatenate(kept) if kept else rows[:0]
        overflow += int(np.maximum(np.asarray(slots, dtype=np.int64) - per, 0).sum())
        return np.frombuffer(rows.tobytes(), dtype=record), overflow
    index = np.flatnonzero(rows.any(axis=1))
    out = np.frombuffer(rows[index].tobytes(), dtype=record)
    if probe is None or probe.packed is None or record != probe.packed:
        return out, overflow
    assert probe.unpack is not None
    words = np.zeros(4, np.int64) if launch is None else np.asarray(launch, np.int64)[:4]
    if int(words[0]) & LAUNCH_SKIPPED:
        return out[:0], overflow + int(words[1] * words[2])
    overflow += max(0, int(words[1] * words[2]) - len(rows))
    return probe.unpack(out, index, words), overflow
