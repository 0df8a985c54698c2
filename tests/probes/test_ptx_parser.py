"""The parser on real compiler output, and its refusals (line number + reason)."""

from __future__ import annotations

import pytest

from gtop.probes.engine import ptx
from gtop.probes.engine.ptx import Kind, PtxParseError

from .helpers import CORPUS

HEAD = ".version 8.7\n.target sm_90a\n.address_size 64\n"


def _parse(path: str) -> ptx.Module:
    return ptx.parse((CORPUS / path).read_text())


def test_nvcc_module_has_funcs_and_entries() -> None:
    m = _parse("nvcc_cuda_kernels.ptx")
    assert [f.name for f in m.kernels] == [
        "saxpy",
        "histogram",
        "warp_sum",
        "wmma_gemm",
        "mma_bf16_tile",
    ]
    assert {f.name for f in m.functions if not f.is_entry} == {"_Z8axpy_onefff", "_Z9clamp_binii"}
    assert "local" in m.shared_names


def test_multiline_call_is_one_statement() -> None:
    saxpy = _parse("nvcc_cuda_kernels.ptx").kernels[0]
    (call,) = [s for s in saxpy.instructions() if s.instr and s.instr.root == "call"]
    assert call.last - call.first >= 5
    assert call.instr is not None and call.instr.operands[1] == "_Z8axpy_onefff"


def test_triton_inline_asm_scope_and_label() -> None:
    m = _parse("triton_matmul_tma.ptx")
    (kernel,) = m.kernels
    kinds = [s.kind for s in kernel.statements]
    assert Kind.OPEN in kinds and Kind.CLOSE in kinds
    assert any(s.code == "waitLoop:" for s in kernel.statements)
    ops = {s.instr.opcode for s in kernel.instructions() if s.instr}
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ops
    assert any(o.startswith("cp.async.bulk.tensor.2d") for o in ops)
    assert any(o.startswith("mbarrier.try_wait") for o in ops)


def test_guards_and_vector_operands() -> None:
    (kernel,) = _parse("triton_add_int.ptx").kernels
    loads = [s.instr for s in kernel.instructions() if s.instr and s.instr.root == "ld"]
    guarded = [i for i in loads if i.opcode == "ld.global.v4.b32"]
    assert guarded and all(i.guard and i.guard.startswith("%p") for i in guarded)
    assert guarded[0].operands == ("{ %r1, %r2, %r3, %r4 }", "[ %rd1 + 0 ]")


def test_debug_sections_and_loc_lines_are_kept() -> None:
    text = (CORPUS / "triton_softmax.ptx").read_text()
    m = ptx.parse(text)
    assert m.text() == text if text.endswith("\n") else m.text() == text + "\n"
    (kernel,) = m.kernels
    assert any(s.code.startswith(".loc") for s in kernel.statements)


@pytest.mark.parametrize(
    ("body", "line", "reason"),
    [
        (".entry k()\n{\n\t.maxwhatever 3;\n\tret;\n}\n", 6, "unsupported directive"),
        (".entry k()\n{\n\tret;\n", 4, "no closing brace"),
        ("garbage here\n", 4, "unexpected 'garbage'"),
        (".entry k()\n{\n\t@ ret;\n}\n", 6, "malformed guard"),
        (".entry k()\n{\n\tadd.s32 %r1, %r1\n}\n", 6, "unterminated statement"),
        (".entry k()\n{\n\t1bad %r1;\n}\n", 6, "not an instruction"),
    ],
)
def test_refusals_name_line_and_reason(body: str, line: int, reason: str) -> None:
    with pytest.raises(PtxParseError) as err:
        ptx.parse(HEAD + body)
    assert err.value.line == line
    assert reason in err.value.reason
    assert str(err.value).startswith(f"line {line}: ")


def test_not_ptx() -> None:
    with pytest.raises(PtxParseError, match="line 1: unexpected 'int' at module scope"):
        ptx.parse("int main() {}\n")
    with pytest.raises(PtxParseError, match=r"no \.address_size"):
        ptx.parse(".version 8.7\n.target sm_90\n")


def test_parses_every_corpus_file() -> None:
    for path in sorted(CORPUS.glob("*.ptx")):
        m = ptx.parse(path.read_text())
        assert m.kernels, path
        for f in m.functions:
            assert f.instructions(), (path, f.name)
