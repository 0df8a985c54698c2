"""Host copies of probed launches as the device leaves them (head + record buffer), built
from records in the probes' layouts: the input of :mod:`gtop.probes.engine.copyback`."""

from __future__ import annotations

import struct

import numpy as np

from gtop.probes.catalog import block_sched
from gtop.probes.engine.copyback import Layout

_F32_ONE = 0x3F80_0000


def head(overflow: int, launch: tuple[int, int, int, int], slots: list[int]) -> bytes:
    return struct.pack(f"<I4x4I{len(slots)}I", overflow, *launch, *slots)


def ring_copy(
    records: np.ndarray, probe: str, stripes: int = 4, per: int | None = None
) -> tuple[Layout, bytes]:
    """``records`` dealt round-robin over ``stripes`` stripes of ``per`` rows (the
    claims past ``per`` dropped), unused rows holding stale bytes."""
    per = per or -(-len(records) // stripes) + 3
    size = records.dtype.itemsize
    body = bytearray(b"\xab" * (stripes * per * size))  # stale: a ring is never cleared
    claims = []
    for i in range(stripes):
        mine = records[i::stripes]
        claims.append(len(mine))
        kept = mine[:per].tobytes()
        body[i * per * size : i * per * size + len(kept)] = kept
    layout = Layout(probe, "ring", stripes, per, size, packed=False)
    return layout, head(0, (0, 0, 0, 0), claims) + bytes(body)


def pack_block_sched(records: np.ndarray) -> np.ndarray:
    """block_sched's packed device rows of ``records`` (what its exit snippet stores)."""
    out = np.zeros(len(records), dtype=block_sched.PACKED)
    out["start_ns"] = records["start_ns"]
    out["end_lo"] = (records["end_ns"] & 0xFFFF_FFFF).astype(np.uint32)
    bits = records["clocks"].astype(np.float32).view(np.uint32).astype(np.int64)
    code = ((bits + 16 - _F32_ONE) << 3) & 0xFFFF_FFFF
    out["clocks_sm"] = ((code & ~0xFF) | records["smid"].astype(np.int64)).astype(np.uint32)
    return out


def packed_copy(
    records: np.ndarray, warps_per_block: int, blocks: int, capacity: int
) -> tuple[Layout, bytes]:
    """A block_sched array copy: each warp's packed row at slot (block, warp), the launch
    word (kernel id, records per block, blocks), zeros elsewhere."""
    size = block_sched.PACKED.itemsize
    body = np.zeros(capacity, dtype=block_sched.PACKED)
    slots = records["block"].astype(np.int64) * warps_per_block + records["warp"]
    keep = slots < capacity
    body[slots[keep]] = pack_block_sched(records[keep])
    kernel = int(records["kernel"][0]) if len(records) else 0
    layout = Layout("block_sched", "array", 1, capacity, size, packed=True)
    return layout, head(0, (kernel, warps_per_block, blocks, kernel), [0]) + body.tobytes()


def array_copy(records: np.ndarray, probe: str, capacity: int) -> tuple[Layout, bytes]:
    """An unpacked array copy: row ``i`` of ``records`` at slot ``i``, zeros after."""
    size = records.dtype.itemsize
    body = records.tobytes() + bytes((capacity - len(records)) * size)
    return Layout(probe, "array", 1, capacity, size, packed=False), head(
        0, (0, 0, 0, 0), [0]
    ) + body
