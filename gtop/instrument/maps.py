"""PTX building blocks shared by probes: ids, the writing lane, record slots and stores.

Module-scope globals (set by the host through ``cuModuleGetGlobal``):

- ``gtop_buf`` (.u64): device pointer of the record buffer (16-byte aligned);
- ``gtop_cap`` (.u32): capacity in records; 0 (the default) disarms the probe: nothing
  is written or counted, so an instrumented kernel can run unprobed between samples;
- ``gtop_slot`` (.u32): next ring slot, i.e. the number of records claimed (those past
  the capacity were dropped);
- ``gtop_overflow`` (.u32): array-map records dropped for an index past the capacity.
"""

from __future__ import annotations

import numpy as np

from gtop.instrument.probe import Level, MapKind, Site

GLOBALS: dict[str, str] = {
    "gtop_buf": ".u64",
    "gtop_cap": ".u32",
    "gtop_slot": ".u32",
    "gtop_overflow": ".u32",
}

REGISTERS: dict[str, str] = {
    "%gtop_g": ".pred",  # the site's guard, set by the rewriter
    "%gtop_lead": ".pred",  # this thread writes the record
    "%gtop_ok": ".pred",  # the record has a slot
    "%gtop_of": ".pred",  # the record overflowed
    "%gtop_x": ".b32",
    "%gtop_y": ".b32",
    "%gtop_z": ".b32",
    "%gtop_m": ".b32",
    "%gtop_b": ".b32",
    "%gtop_s": ".b32",
    "%gtop_r": ".b32",
    "%gtop_cap": ".b32",
    "%gtop_smid": ".b32",
    "%gtop_blk": ".b32",
    "%gtop_tid": ".b32",
    "%gtop_wid": ".b32",
    "%gtop_a": ".b64",
}

# The globals a host zeroes before each probed launch.
RESET = ("gtop_slot", "gtop_overflow")

_ST = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}


def global_decls() -> list[str]:
    return [f".visible .global .align 8 {t} {name};" for name, t in GLOBALS.items()]


def ids() -> str:
    """SM id, linear block id, linear thread id and warp-in-block id."""
    return """\
mov.u32 %gtop_smid, %smid;
mov.u32 %gtop_x, %ctaid.z;
mov.u32 %gtop_y, %nctaid.y;
mov.u32 %gtop_z, %ctaid.y;
mad.lo.u32 %gtop_blk, %gtop_x, %gtop_y, %gtop_z;
mov.u32 %gtop_x, %nctaid.x;
mov.u32 %gtop_y, %ctaid.x;
mad.lo.u32 %gtop_blk, %gtop_blk, %gtop_x, %gtop_y;
mov.u32 %gtop_x, %tid.z;
mov.u32 %gtop_y, %ntid.y;
mov.u32 %gtop_z, %tid.y;
mad.lo.u32 %gtop_tid, %gtop_x, %gtop_y, %gtop_z;
mov.u32 %gtop_x, %ntid.x;
mov.u32 %gtop_y, %tid.x;
mad.lo.u32 %gtop_tid, %gtop_tid, %gtop_x, %gtop_y;
shr.u32 %gtop_wid, %gtop_tid, 5;
"""


def writer(level: Level) -> str:
    """Set ``%gtop_lead``: the lowest guarded active lane (warp) or every guarded thread."""
    if level is Level.THREAD:
        return "mov.pred %gtop_lead, %gtop_g;\n"
    return """\
activemask.b32 %gtop_m;
vote.sync.ballot.b32 %gtop_b, %gtop_g, %gtop_m;
mov.u32 %gtop_x, %lanemask_lt;
and.b32 %gtop_x, %gtop_x, %gtop_b;
setp.eq.and.u32 %gtop_lead, %gtop_x, 0, %gtop_g;
"""


def _per_block(level: Level) -> str:
    """``%gtop_x`` = warps (or threads) per block; needs ids()."""
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


def slot(site: Site, record: np.dtype) -> str:
    """Claim a slot for each writing lane: sets ``%gtop_ok`` and ``%gtop_a`` (its address).

    Ring: one atomic per warp claims the slots of all its writing lanes (each takes the
    warp's base plus its rank), and the host derives drops from the slot counter. Array:
    the slot is (linear block, warp or thread); needs :func:`ids` rendered before it.
    """
    # A capacity of 0 means "not armed": no slot is claimed and nothing counts as dropped.
    text = "ld.global.u32 %gtop_cap, [gtop_cap];\n"
    text += "setp.ne.and.u32 %gtop_lead, %gtop_cap, 0, %gtop_lead;\n"
    if site.map is MapKind.RING:
        text += """\
mov.u32 %gtop_s, 0;
activemask.b32 %gtop_m;
vote.sync.ballot.b32 %gtop_b, %gtop_lead, %gtop_m;
mov.u32 %gtop_x, %lanemask_lt;
and.b32 %gtop_x, %gtop_x, %gtop_b;
popc.b32 %gtop_r, %gtop_x;
popc.b32 %gtop_y, %gtop_b;
brev.b32 %gtop_z, %gtop_b;
clz.b32 %gtop_z, %gtop_z;
setp.eq.and.u32 %gtop_of, %gtop_r, 0, %gtop_lead;
@%gtop_of atom.global.add.u32 %gtop_s, [gtop_slot], %gtop_y;
shfl.sync.idx.b32 %gtop_s, %gtop_s, %gtop_z, 31, %gtop_m;
add.u32 %gtop_s, %gtop_s, %gtop_r;
setp.lt.and.u32 %gtop_ok, %gtop_s, %gtop_cap, %gtop_lead;
"""
    else:
        index = "%gtop_wid" if site.level is Level.WARP else "%gtop_tid"
        text += (
            _per_block(site.level)
            + f"""\
mad.lo.u32 %gtop_s, %gtop_blk, %gtop_x, {index};
setp.lt.and.u32 %gtop_ok, %gtop_s, %gtop_cap, %gtop_lead;
setp.ge.and.u32 %gtop_of, %gtop_s, %gtop_cap, %gtop_lead;
@%gtop_of red.global.add.u32 [gtop_overflow], 1;
"""
        )
    return (
        text
        + f"""\
ld.global.u64 %gtop_a, [gtop_buf];
mad.wide.u32 %gtop_a, %gtop_s, {record.itemsize}, %gtop_a;
"""
    )


def store(record: np.dtype, values: dict[str, str]) -> str:
    """Stores of ``values`` (field -> register) at the fields' offsets, for ``%gtop_ok``."""
    lines = []
    for name, reg in values.items():
        dt, offset = record.fields[name][:2]
        lines.append(f"@%gtop_ok st.global.{_ST[dt.itemsize]} [%gtop_a+{offset}], {reg};")
    return "\n".join(lines) + "\n"


def decode(record: np.dtype, ring: bool, capacity: int, host: np.ndarray) -> tuple[np.ndarray, int]:
    """Records and drops from a host copy of ``gtop_slot``, ``gtop_overflow`` (u32 each)
    and the record buffer. Ring: the first ``min(slot, capacity)`` slots, drops =
    ``slot - capacity`` when positive. Array: the slots that were written (not all zero).
    """
    slot, overflow = (int(x) for x in np.asarray(host[:8], dtype=np.uint8).view(np.uint32))
    raw = np.asarray(host[8 : 8 + capacity * record.itemsize], dtype=np.uint8)
    raw = raw.reshape(-1, record.itemsize)
    if ring:
        raw = raw[: min(slot, capacity)]
        overflow += max(0, slot - capacity)
    else:
        raw = raw[raw.any(axis=1)]
    return np.frombuffer(raw.tobytes(), dtype=record), overflow
