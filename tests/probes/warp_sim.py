"""A tiny warp-synchronous interpreter for probe snippets, to check records without a GPU.

It runs the straight-line instruction subset the probes use, for the active lanes of one
warp in lockstep, against a flat little-endian memory holding the module globals and the
record buffer. Anything outside that subset raises, so a new instruction in a probe
shows up here as an explicit gap rather than a silent pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from gtop.probes.engine import maps
from gtop.probes.engine.probe import MapKind, Probe
from gtop.probes.engine.ptx import Instruction
from gtop.probes.engine.verify import parse_snippet

GLOBAL_BASE = 0x1000
GLOBAL_SPACE = 0x1000_0000  # generic addresses from here up count as global memory
BUF_BASE = 0x10000
_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}


@dataclass
class Device:
    """Memory with the module globals bound as the host runtime binds them: ``capacity``
    records, split into ``stripes`` ring stripes (one per SM, ``%smid`` modulo stripes)."""

    capacity: int
    record_size: int
    stripes: int = 1
    mem: bytearray = field(default_factory=lambda: bytearray(0))
    globals: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mem = bytearray(BUF_BASE + self.capacity * self.record_size + 64)
        addr = GLOBAL_BASE
        for name, (_, kind) in maps.GLOBALS.items():
            addr = -(-addr // maps.alignment(name)) * maps.alignment(name)
            self.globals[name] = addr
            addr += 4 * maps.MAX_STRIPES if "[" in kind else 8
        assert addr <= BUF_BASE
        self.write(self.globals["gtop_buf"], 8, BUF_BASE)
        self.write(self.globals["gtop_stripes"], 4, self.stripes)
        self.write(self.globals["gtop_per"], 4, self.capacity // self.stripes)
        self.write(self.globals["gtop_cap"], 4, self.capacity)

    def read(self, addr: int, size: int) -> int:
        return int.from_bytes(self.mem[addr : addr + size], "little")

    def write(self, addr: int, size: int, value: int) -> None:
        self.mem[addr : addr + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def slots(self) -> np.ndarray:
        base = self.globals["gtop_slot"]
        return np.array([self.read(base + 4 * i, 4) for i in range(self.stripes)], np.uint32)

    def decode(self, record: np.dtype | Probe, ring: bool) -> tuple[np.ndarray, int]:
        """What the host runtime would read back, through the same reader; given a
        probe, its array map's own device layout (packed records are unpacked)."""
        probe = record if isinstance(record, Probe) else None
        if probe is not None:
            record = probe.device_record(MapKind.RING if ring else MapKind.ARRAY)
        assert isinstance(record, np.dtype) and record.itemsize == self.record_size
        body = self.mem[BUF_BASE : BUF_BASE + self.capacity * self.record_size]
        overflow = self.read(self.globals["gtop_overflow"], 4)
        launch = [self.read(self.globals["gtop_launch"] + 4 * i, 4) for i in range(4)]
        per = self.capacity // self.stripes
        buf = np.frombuffer(bytes(body), np.uint8)
        return maps.decode(record, ring, self.slots(), per, overflow, buf, probe, launch)


@dataclass
class Warp:
    """One warp's lanes: ``active`` lane ids, per-lane registers, special registers."""

    ctaid: tuple[int, int, int] = (0, 0, 0)
    nctaid: tuple[int, int, int] = (1, 1, 1)
    ntid: tuple[int, int, int] = (128, 1, 1)
    warp: int = 0  # warp index in the block
    smid: int = 0
    active: tuple[int, ...] = tuple(range(32))
    clock: int = 0
    globaltimer: int = 0
    regs: dict[int, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.regs = {lane: {} for lane in range(32)}

    def special(self, name: str, lane: int) -> int:
        tid = self.warp * 32 + lane
        dims = {"x": 0, "y": 1, "z": 2}
        base, _, axis = name[1:].partition(".")
        if base == "tid":
            x, y = self.ntid[0], self.ntid[1]
            return [tid % x, tid // x % y, tid // (x * y)][dims[axis]]
        if base in ("ntid", "ctaid", "nctaid"):
            return getattr(self, base)[dims[axis]]
        return {
            "smid": self.smid,
            "laneid": lane,
            "lanemask_lt": (1 << lane) - 1,
            "clock64": self.clock,
            "clock": self.clock & 0xFFFF_FFFF,
            "globaltimer": self.globaltimer,
        }[base]


def run(code: str, warp: Warp, dev: Device, guard: dict[int, bool] | None = None) -> None:
    """Execute snippet ``code`` on ``warp``; ``guard`` pre-sets a lane predicate register
    (``%p9``) that the code may read, as a kernel's own predicate would be."""
    for lane in warp.active:
        if guard is not None:
            warp.regs[lane]["%p9"] = int(guard.get(lane, False))
    for ins in parse_snippet(code):
        _step(ins, warp, dev)


def _value(op: str, lane: int, warp: Warp, dev: Device) -> int:
    op = op.strip()
    if op.startswith("%"):
        if op in warp.regs[lane]:
            return warp.regs[lane][op]
        return warp.special(op, lane)
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", op):
        return int(op, 0)
    if op in dev.globals:
        return dev.globals[op]
    raise NotImplementedError(f"operand {op!r}")


def _address(op: str, lane: int, warp: Warp, dev: Device) -> int:
    m = re.fullmatch(r"\[\s*([%\w$]+)\s*(?:\+\s*(-?\w+))?\s*\]", op.strip())
    if not m:
        raise NotImplementedError(f"address {op!r}")
    return _value(m.group(1), lane, warp, dev) + int(m.group(2) or "0", 0)


def _bits(ins: Instruction) -> int:
    for part in reversed(ins.parts):
        if part[1:] in _SIZES and part[0] in "bsu":
            return 8 * _SIZES[part[1:]]
    return 32


def _step(ins: Instruction, warp: Warp, dev: Device) -> None:
    lanes = [
        lane
        for lane in warp.active
        if ins.guard is None or bool(warp.regs[lane][ins.guard]) != ins.negated
    ]
    op, ops = ins.opcode, ins.operands
    mask = (1 << _bits(ins)) - 1
    val = lambda i, lane: _value(ops[i], lane, warp, dev)  # noqa: E731
    if op == "activemask.b32":
        m = sum(1 << lane for lane in warp.active)
        results = {lane: m for lane in lanes}
    elif op == "vote.sync.ballot.b32":
        ballot = sum(1 << lane for lane in warp.active if val(1, lane))
        results = {lane: ballot for lane in lanes}
    elif op == "shfl.sync.idx.b32":
        src = {lane: val(1, lane) for lane in warp.active}
        results = {lane: src.get(val(2, lane) & 31, src[lane]) for lane in lanes}
    elif ins.root in ("atom", "red"):
        results = {}
        size = _bits(ins) // 8
        first = 0 if ins.root == "red" else 1  # the address operand
        for lane in lanes:  # in lane order, as one serialised order of the hardware's
            addr = _address(ops[first], lane, warp, dev)
            old = dev.read(addr, size)
            a = val(first + 1, lane)
            kind = ins.parts[2]
            if kind == "cas":
                new = val(first + 2, lane) if old == a else old
            else:
                new = {"add": old + a, "min": min(old, a), "max": max(old, a)}[kind]
            dev.write(addr, size, new)
            if ins.root == "atom":
                results[lane] = old
    elif ins.root == "st":
        for lane in lanes:
            addr = _address(ops[0], lane, warp, dev)
            words = ops[1].strip("{} ").split(",") if ops[1].startswith("{") else [ops[1]]
            size = _bits(ins) // 8
            if addr % (size * len(words)):  # the hardware faults (misaligned address)
                raise AssertionError(f"misaligned {ins.opcode} at {addr:#x}")
            for k, word in enumerate(words):
                dev.write(addr + k * size, size, _value(word, lane, warp, dev))
        return
    elif ins.opcode == "mov.b64" and ops[1].startswith("{"):
        lo, hi = (w.strip() for w in ops[1].strip("{} ").split(","))
        results = {
            lane: (_value(lo, lane, warp, dev) & 0xFFFFFFFF) | (_value(hi, lane, warp, dev) << 32)
            for lane in lanes
        }
    elif ins.opcode == "cvt.rn.f32.u64":  # f32 registers hold their bits
        results = {lane: int(np.float32(val(1, lane)).view(np.uint32)) for lane in lanes}
    elif ins.root == "cvt" and ins.parts[-1].startswith("u"):  # integer truncation
        width = (1 << 8 * _SIZES[ins.parts[1][1:]]) - 1
        results = {lane: val(1, lane) & width for lane in lanes}
    elif ins.root == "ld":
        results = {
            lane: dev.read(_address(ops[1], lane, warp, dev), _bits(ins) // 8) for lane in lanes
        }
    else:
        results = {
            lane: _alu(ins, [val(i, lane) for i in range(1, len(ops))], mask) for lane in lanes
        }
    for lane, value in results.items():
        warp.regs[lane][ops[0]] = value


def _alu(ins: Instruction, a: list[int], mask: int) -> int:
    root, parts = ins.root, ins.parts
    if root == "setp":
        cmp = {"eq": a[0] == a[1], "ne": a[0] != a[1], "lt": a[0] < a[1], "ge": a[0] >= a[1]}
        result = cmp[parts[1]]
        if "and" in parts:
            return int(result and bool(a[2]))
        return int(result or bool(a[2])) if "or" in parts else int(result)
    if root == "bfi":
        field_mask = ((1 << a[3]) - 1) << a[2]
        return ((a[1] & ~field_mask) | ((a[0] << a[2]) & field_mask)) & mask
    if root == "mov":
        return a[0] & mask if parts[-1] != "pred" else int(bool(a[0]))
    if root == "not" and parts[-1] == "pred":
        return int(not a[0])
    if root == "mad":
        wide = "wide" in parts
        out = a[0] * a[1] + a[2]
        return out & ((1 << 64) - 1 if wide else mask)
    simple = {
        "add": lambda: a[0] + a[1],
        "sub": lambda: a[0] - a[1],
        "mul": lambda: a[0] * a[1],
        "shr": lambda: a[0] >> a[1],
        "and": lambda: a[0] & a[1],
        "or": lambda: a[0] | a[1],
        "isspacep": lambda: int(a[0] >= GLOBAL_SPACE),
        "rem": lambda: a[0] % a[1],
        "popc": lambda: bin(a[0] & mask).count("1"),
        "brev": lambda: int(f"{a[0] & mask:032b}"[::-1], 2),
        "clz": lambda: 32 - (a[0] & mask).bit_length(),
        "selp": lambda: a[0] if a[2] else a[1],
    }
    if root not in simple:
        raise NotImplementedError(f"instruction {ins.opcode}")
    return simple[root]() & mask
