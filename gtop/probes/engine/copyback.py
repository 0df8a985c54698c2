"""One probed launch's host copy: what the agent ships untouched and gtop decodes.

A copy is the device-side head — ``gtop_overflow`` (u32), 4 bytes of padding,
``gtop_launch`` (u32[4]), ``gtop_slot`` (u32 per stripe) — followed by the record
buffer (see :mod:`.maps`). Inside the target only :func:`trim` runs (standard library:
``struct`` and slicing), so the agent's thread copies out and ships just the rows a
launch can have written; :func:`decode` (numpy, :func:`.maps.decode` and the probe's
``unpack``) runs in gtop's process.

What :func:`trim` keeps:

- ring map: the claimed rows of each stripe (``min(slots[i], per)`` from row
  ``i * per``), packed one stripe after another; the head keeps every claim count;
- packed array map (block_sched): the first ``records per block * blocks`` rows, read
  from ``gtop_launch`` (none when the launch word says it was skipped);
- other array maps: every row up to the last one with a non-zero byte.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from .probe import Probe

HEAD_FIXED = 24
"""Bytes before the stripe counters: overflow, padding, ``gtop_launch``."""
LAUNCH = struct.Struct("<4I")
LAUNCH_SKIPPED = 0x200  # maps.LAUNCH_SKIPPED, here without maps' numpy import


@dataclass(frozen=True)
class Layout:
    """How to read one probed launch's copy (sent with it as JSON)."""

    probe: str
    map: str  # "array" or "ring"
    stripes: int
    per: int  # records per stripe (the whole capacity for an array map)
    record_bytes: int  # the device record's size (the packed one where the probe packs)
    packed: bool  # the array map holds the probe's packed record, unpacked by decode

    @property
    def head_bytes(self) -> int:
        return HEAD_FIXED + 4 * self.stripes

    def value(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_value(cls, v: dict[str, Any]) -> Layout:
        """Raises ValueError (or KeyError/TypeError) on a malformed value."""
        out = cls(
            probe=str(v["probe"]),
            map=str(v["map"]),
            stripes=int(v["stripes"]),
            per=int(v["per"]),
            record_bytes=int(v["record_bytes"]),
            packed=bool(v["packed"]),
        )
        if out.map not in ("array", "ring") or out.record_bytes <= 0:
            raise ValueError(f"bad probe copy layout {v!r}")
        if not 1 <= out.stripes <= 1 << 16 or out.per < 0:
            raise ValueError(f"bad probe copy layout {v!r}")
        return out


def trim(layout: Layout, host: memoryview) -> bytes:
    """The head and the rows worth shipping of a full host copy (see the module doc)."""
    head = bytes(host[: layout.head_bytes])
    body = host[layout.head_bytes :]
    size = layout.record_bytes
    if layout.map == "ring":
        slots = struct.unpack_from(f"<{layout.stripes}I", head, HEAD_FIXED)
        parts = [
            body[i * layout.per * size : (i * layout.per + min(n, layout.per)) * size]
            for i, n in enumerate(slots)
        ]
        return head + b"".join(parts)
    rows = len(body) // size
    if layout.packed:
        word, per_block, blocks, _ = LAUNCH.unpack_from(head, 8)
        used = 0 if word & LAUNCH_SKIPPED else min(rows, per_block * blocks)
        return head + bytes(body[: used * size])
    data = bytes(body).rstrip(b"\0")
    return head + data + bytes(-len(data) % size)


def decode(layout: Layout, data: bytes | memoryview, probe: Probe) -> tuple[np.ndarray, int]:
    """(records in ``probe``'s own layout, records dropped) from a trimmed copy of one of
    its launches.

    Raises:
        ValueError: a copy that does not fit its layout.
    """
    import numpy as np

    from . import maps

    kind = maps.MapKind(layout.map)
    record = probe.device_record(kind)
    if record.itemsize != layout.record_bytes:
        raise ValueError(
            f"{layout.probe}: {layout.record_bytes}-byte records, want {record.itemsize}"
        )
    raw = np.frombuffer(data, dtype=np.uint8)
    body = raw[layout.head_bytes :]
    if len(raw) < layout.head_bytes or len(body) % record.itemsize:
        raise ValueError(f"{layout.probe}: a copy of {len(raw)} bytes does not fit its layout")
    overflow = int(raw[:4].view(np.uint32)[0])
    launch = raw[8:HEAD_FIXED].view(np.uint32)
    slots = raw[HEAD_FIXED : layout.head_bytes].view(np.uint32)
    if kind is maps.MapKind.RING:
        kept = int(np.minimum(slots.astype(np.int64), layout.per).sum())
        if kept * record.itemsize != len(body):
            raise ValueError(f"{layout.probe}: ring copy holds {len(body)} bytes, claims {kept}")
        overflow += int(np.maximum(slots.astype(np.int64) - layout.per, 0).sum())
        return np.frombuffer(body.tobytes(), dtype=record), overflow
    return maps.decode(record, False, slots, layout.per, overflow, body, probe, launch)
