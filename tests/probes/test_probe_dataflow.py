"""Every value a probe stores is the one it meant to store: the last write of each stored
register before its store is not inside the shared slot/writer code (which reuses
scratch registers), except for the ids the probe asked for."""

from __future__ import annotations

import re

import pytest

from gtop.probes.catalog import PROBES
from gtop.probes.engine import maps, ptx
from gtop.probes.engine.probe import EXIT, Level, MapKind, Site
from gtop.probes.engine.rewrite import instrument
from gtop.probes.engine.verify import parse_snippet, written_registers

from .helpers import CORPUS

SITES = {
    "mem_trace": "ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+16]",
    "tensorop": "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%r1}, %rd1, %rd2, 1, 1, 1",
}


def _cases() -> list[tuple[str, Level, MapKind]]:
    return [(n, lv, mp) for n, p in PROBES.items() for lv in p.levels for mp in p.maps]


def _check(
    reg: str, upto: int, code: list[str], instrs: list, scratch: set[str], own: set[str]
) -> None:
    """The value of ``reg`` seen at ``upto`` comes from the probe's own code, following
    word packing (``bfi``, ``mov.b64 {lo, hi}``) back to its sources."""
    writers = [j for j in range(upto) if reg in written_registers(instrs[j])]
    if not writers:  # set by another tracepoint: must be the probe's own register
        assert reg in own, f"{reg} is never set"
        return
    j = writers[-1]
    ins = instrs[j]
    if ins.root == "bfi" or (ins.opcode == "mov.b64" and ins.operands[1].startswith("{")):
        for src in re.findall(r"%[\w$]+", " ".join(ins.operands[1:])):
            _check(src, j, code, instrs, scratch, own)
        return
    assert code[j] not in scratch, f"{reg} stored after {code[j]!r}"


@pytest.mark.parametrize(("name", "level", "map_kind"), _cases())
def test_stored_values_survive_the_slot_code(name: str, level: Level, map_kind: MapKind) -> None:
    probe = PROBES[name]
    stores = [tp for tp in probe.tracepoints if tp.at == EXIT or tp.name == "access"]
    instr = ptx.parse_instruction(SITES.get(name, "ret"), 1)
    site = Site(7, level, map_kind, 8, instr, 0)
    scratch = {
        line.strip() for line in (maps.writer(level) + maps.slot(site, probe.record)).splitlines()
    } - {line.strip() for line in maps.ids().splitlines()}
    assert stores
    for tp in stores:
        code = [line.strip() for line in tp.snippet(site).splitlines() if line.strip()]
        instrs = parse_snippet("\n".join(code))

        stored = 0
        for i, ins in enumerate(instrs):
            if ins.opcode.startswith("st.global"):
                for reg in re.findall(r"%[\w$]+", ins.operands[1]):
                    _check(reg, i, code, instrs, scratch, set(probe.registers))
                    stored += 1
        assert stored >= 2


def test_kernel_ids_reach_the_records() -> None:
    module = ptx.parse((CORPUS / "nvcc_cuda_kernels.ptx").read_text())
    for probe in PROBES.values():
        result = instrument(module, probe)
        for k in result.kernels:
            if k.sites and set(k.sites) != {"entry"}:  # it has sites that write records
                assert f"\tmov.u32 %gtop_x, {k.kernel_id};" in result.text, (probe.name, k)
