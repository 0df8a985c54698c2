"""Every value a probe stores is the one it meant to store: the last write of each stored
register before its store is not inside the shared slot/writer code (which reuses
scratch registers), except for the ids the probe asked for."""

from __future__ import annotations

import pytest

from gtop.instrument import maps, ptx
from gtop.instrument.probe import EXIT, Level, MapKind, Site
from gtop.instrument.probes import PROBES
from gtop.instrument.rewrite import instrument
from gtop.instrument.verify import parse_snippet, written_registers

from .helpers import CORPUS

SITES = {
    "mem_trace": "ld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+16]",
    "tensorop": "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%r1}, %rd1, %rd2, 1, 1, 1",
}


def _cases() -> list[tuple[str, Level, MapKind]]:
    return [(n, lv, mp) for n, p in PROBES.items() for lv in p.levels for mp in p.maps]


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
        checked = 0
        for i, ins in enumerate(instrs):
            if not ins.opcode.startswith("st.global"):
                continue
            src = ins.operands[1]
            writers = [j for j in range(i) if src in written_registers(instrs[j])]
            if writers:
                last = code[writers[-1]]
                assert last not in scratch, f"{name}: {src} stored after {last!r}"
            else:  # set by another tracepoint: must be the probe's own, not scratch
                assert src in probe.registers, f"{name}: {src} is never set"
            checked += 1
        assert checked >= 3


def test_kernel_ids_reach_the_records() -> None:
    module = ptx.parse((CORPUS / "nvcc_cuda_kernels.ptx").read_text())
    for probe in PROBES.values():
        result = instrument(module, probe)
        for k in result.kernels:
            if set(k.sites) != {"entry"}:  # it has sites that write records
                assert f"\tmov.u32 %gtop_x, {k.kernel_id};" in result.text, (probe.name, k)
