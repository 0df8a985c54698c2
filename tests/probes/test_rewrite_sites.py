"""Where and how the rewriter places snippets, and what it refuses."""

from __future__ import annotations

import re

import pytest

from gtop.probes.catalog import PROBES
from gtop.probes.engine import ptx
from gtop.probes.engine.rewrite import RewriteError, instrument, read_header

from .helpers import ENTRY_K, PTX_PREAMBLE

HEAD = PTX_PREAMBLE + "\n" + ENTRY_K


def _kernel(body: str) -> ptx.Module:
    return ptx.parse(HEAD + body + "}\n")


def _snippet_before(text: str, line: str) -> list[str]:
    """The lines inserted right before ``line``."""
    lines = text.splitlines()
    at = lines.index(line)
    start = at
    while "gtop" in lines[start - 1]:
        start -= 1
    return lines[start:at]


def test_guards_follow_the_exit_predicate() -> None:
    text = instrument(_kernel("\t@!%p2 exit;\n\t@%p1 ret;\n\tret;\n"), PROBES["block_sched"]).text
    assert _snippet_before(text, "\t@!%p2 exit;")[0] == "\tnot.pred %gtop_g, %p2;"
    assert _snippet_before(text, "\t@%p1 ret;")[0] == "\tmov.pred %gtop_g, %p1;"
    assert _snippet_before(text, "\tret;")[0] == "\tmov.pred %gtop_g, 1;"
    assert read_header(text)["kernels"][0]["sites"] == {"entry": 1, "exit": 3}


def test_after_sites_follow_the_instruction() -> None:
    mma = (
        "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
        "{%f1,%f2,%f3,%f4}, {%r3,%r4}, {%r5}, {%f1,%f2,%f3,%f4};"
    )
    lines = instrument(_kernel(mma + "\n\tret;\n"), PROBES["tensorop"]).text.splitlines()
    at = lines.index(mma)
    assert lines[at - 2].strip().startswith("selp.u32 %gtop_tc_fl, %gtop_tc_fl, %gtop_tc_e")
    assert lines[at - 1].strip() == "or.pred %gtop_tc_h, %gtop_tc_h, %gtop_g;"
    assert lines[at + 1].strip() == "mov.pred %gtop_g, 1;"
    assert lines[at + 2].strip() == "mov.u32 %gtop_tc_d, %clock;"


def test_mem_trace_reads_the_original_address_and_width() -> None:
    body = "\tld.global.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1+-16];\n\tret;\n"
    text = instrument(_kernel(body), PROBES["mem_trace"]).text
    assert "\tmov.u64 %gtop_mt_a, %rd1;" in text
    assert "\tadd.s64 %gtop_mt_a, %gtop_mt_a, -16;" in text
    assert "\tmov.u32 %gtop_y, 16;" in text  # 4 x 32-bit lanes


def test_refuses_a_site_sharing_its_line() -> None:
    with pytest.raises(RewriteError, match=r"line 12: k: 'ret' shares its line"):
        instrument(_kernel("\tadd.s32 %r1, %r1, 1; ret;\n"), PROBES["block_sched"])


def test_refuses_unknown_address_forms() -> None:
    body = "\tld.global.u32 %r1, [%rd1+%r2];\n\tret;\n"
    with pytest.raises(RewriteError, match=r"line 12: k: unsupported address operand"):
        instrument(_kernel(body), PROBES["mem_trace"])


def test_refuses_more_tensorop_classes_than_the_record_holds() -> None:
    shapes = ["m16n8k8", "m16n8k16"]
    types = ["f32.f16.f16.f32", "f32.bf16.bf16.f32", "f16.f16.f16.f16", "s32.s8.s8.s32"]
    body = "".join(
        f"\tmma.sync.aligned.{s}.row.col.{t} {{%f1,%f2,%f3,%f4}}, {{%r3,%r4}}, {{%r5}}, "
        "{%f1,%f2,%f3,%f4};\n"
        for s in shapes
        for t in types
    )
    with pytest.raises(RewriteError, match="more than 6 tensorop classes"):
        instrument(_kernel(body + "\tret;\n"), PROBES["tensorop"])


def test_kernel_regex_selects_and_numbers_kernels() -> None:
    head = ".version 8.7\n.target sm_90a\n.address_size 64\n"
    module = ptx.parse(
        head + ".visible .entry alpha()\n{\n\tret;\n}\n.entry beta()\n{\n\tret;\n}\n"
    )
    assert [k.name for k in module.kernels] == ["alpha", "beta"]
    result = instrument(module, PROBES["block_sched"], kernel="^be")
    assert [(k.name, k.kernel_id) for k in result.kernels] == [("beta", 0)]
    with pytest.raises(RewriteError, match=re.escape("no kernel matches 'gamma'")):
        instrument(module, PROBES["block_sched"], kernel="gamma")


@pytest.mark.parametrize(
    ("opcode", "width"),
    [
        ("ld.global.b32", 4),
        ("ld.global.nc.v2.f32", 8),
        ("st.global.v4.b16", 8),
        ("ld.global.u8", 1),
        ("st.global.bf16x2", 4),
        ("ld.global.L1::evict_last.v2.b64", 16),
        ("st.global.f16", 2),
    ],
)
def test_access_widths(opcode: str, width: int) -> None:
    from gtop.probes.catalog.mem_trace import access
    from gtop.probes.engine.ptx import parse_instruction

    store = opcode.startswith("st")
    ins = parse_instruction(f"{opcode} {'[%rd1], %r1' if store else '%r1, [%rd1]'}", 1)
    assert access(ins) == ("[%rd1]", str(width), store)


def test_first_clock_is_tracked_once_per_basic_block() -> None:
    """tensorop sets first_clock at the first unguarded mma of a basic block only: the
    later ones of the block cannot run first. A branch target or a guarded site starts
    over; a debug-only label does not."""
    from gtop.probes.catalog import PROBES
    from gtop.probes.engine import ptx as ptx_mod
    from gtop.probes.engine.rewrite import instrument as rewrite

    mma = (
        "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
        "{%f1,%f2,%f3,%f4}, {%r3,%r4}, {%r5}, {%f1,%f2,%f3,%f4};\n"
    )
    body = (
        mma
        + "$L__tmp0:\n"  # debug label: no branch refers to it
        + mma
        + "$L__BB0_1:\n"  # a branch target
        + mma.replace("\tmma", "\t@%p1 mma")  # may not run: does not cover the next
        + mma
        + mma
        + "\t@%p2 bra $L__BB0_1;\n"
        + mma
        + "\tret;\n"
    )
    text = (
        ".version 8.7\n.target sm_90a\n.address_size 64\n\n.visible .entry k()\n{\n"
        "\t.reg .pred %p<4>;\n\t.reg .b32 %r<8>;\n\t.reg .f32 %f<8>;\n" + body + "}\n"
    )
    out = rewrite(ptx_mod.parse(text), PROBES["tensorop"]).text
    lines = out.splitlines()
    sets = [i for i, ln in enumerate(lines) if "selp.u32 %gtop_tc_fl, %gtop_tc_fl" in ln]
    mmas = [i for i, ln in enumerate(lines) if "mma.sync" in ln]
    # which mma each first_clock update precedes
    owners = [next(k for k, m in enumerate(mmas) if m > s) for s in sets]
    assert owners == [0, 2, 3, 5]
