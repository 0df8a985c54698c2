"""The probe verifier: one check per rule, each returning the problems it found.

Rules: a snippet is straight-line instructions only; it writes only registers that the
probe declared (``%gtop_`` names); it never branches; it never touches shared memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .probe import PREFIX
from .ptx import Instruction, Kind, PtxParseError, split_statements

_NO_DEST = {"st", "red", "prefetch", "prefetchu", "bar", "barrier", "membar", "fence", "trap"}
_BRANCHES = {"bra", "brx", "call", "ret", "exit", "trap", "brkpt"}
_SHARED_OPS = {"ldmatrix", "stmatrix", "mbarrier", "wgmma", "tensormap", "ldsm", "stsm"}
_REG = re.compile(r"%[A-Za-z_$][\w$]*")


class ProbeRejected(ValueError):
    """A snippet broke a verifier rule; the message lists every problem."""


def parse_snippet(text: str) -> list[Instruction]:
    """Parse snippet PTX; labels, scopes and directives are refused (straight-line only).

    Raises:
        ProbeRejected: on anything that is not a plain instruction.
    """
    try:
        stmts = split_statements(text)
    except PtxParseError as e:
        raise ProbeRejected(f"snippet {e}") from None
    out = []
    for s in stmts:
        if s.kind is not Kind.INSTR or s.instr is None:
            raise ProbeRejected(f"snippet line {s.first + 1}: only instructions allowed: {s.code}")
        out.append(s.instr)
    return out


def written_registers(instr: Instruction) -> list[str]:
    """Registers an instruction writes: its first operand, unless it only writes memory."""
    if instr.root in _NO_DEST or not instr.operands or instr.operands[0].startswith("["):
        return []
    return _REG.findall(instr.operands[0])


def check_writes(instrs: Iterable[Instruction], declared: Iterable[str]) -> list[str]:
    """Rule: write only the probe's own declared registers."""
    own = set(declared)
    problems = []
    for ins in instrs:
        for reg in written_registers(ins):
            if reg not in own:
                what = "an existing register" if not reg.startswith(PREFIX) else "an undeclared"
                problems.append(f"{ins.opcode}: writes {what} {reg}")
    return problems


def check_branches(instrs: Iterable[Instruction]) -> list[str]:
    """Rule: no control flow (bra, brx, call, ret, exit, trap, brkpt)."""
    return [f"{i.opcode}: branches" for i in instrs if i.root in _BRANCHES]


def check_shared(instrs: Iterable[Instruction], shared_names: Iterable[str] = ()) -> list[str]:
    """Rule: no shared memory: no ``.shared`` state space, no shared-memory-only opcodes,
    no operand naming a ``.shared`` variable of the module."""
    names = set(shared_names)
    problems = []
    for i in instrs:
        if any(p.startswith("shared") for p in i.parts) or i.root in _SHARED_OPS:
            problems.append(f"{i.opcode}: touches shared memory")
            continue
        used = {w for op in i.operands for w in re.findall(r"[A-Za-z_$][\w$]*", op)}
        if used & names:
            problems.append(f"{i.opcode}: uses shared variable {sorted(used & names)[0]}")
    return problems


def verify(text: str, declared: Iterable[str], shared_names: Iterable[str] = ()) -> None:
    """Run every rule over a rendered snippet.

    Raises:
        ProbeRejected: listing every problem found.
    """
    instrs = parse_snippet(text)
    problems = (
        check_writes(instrs, declared) + check_branches(instrs) + check_shared(instrs, shared_names)
    )
    if problems:
        raise ProbeRejected("probe rejected: " + "; ".join(problems))
