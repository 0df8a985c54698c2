"""Damaged PTX never crashes the engine: it parses and instruments, or it is refused
with a PtxParseError/RewriteError/ProbeRejected that names a line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gtop.probes.catalog import PROBES
from gtop.probes.engine import ptx
from gtop.probes.engine.rewrite import RewriteError, instrument
from gtop.probes.engine.verify import ProbeRejected

from .helpers import CORPUS

SOURCES = [
    (CORPUS / name).read_text().splitlines()
    for name in ("nvcc_cuda_kernels.ptx", "triton_matmul_tma.ptx", "triton_softmax.ptx")
]
JUNK = ["}", "{", ";", "@", "@%p1", ".entry", ".reg .b32", "garbage here", "/*", '"', "x:", ""]


@st.composite
def damaged(draw: st.DrawFn) -> str:
    lines = list(draw(st.sampled_from(SOURCES)))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["delete", "duplicate", "junk", "truncate"]))
        if action == "delete":
            del lines[at]
        elif action == "duplicate":
            lines.insert(at, lines[at])
        elif action == "junk":
            lines.insert(at, draw(st.sampled_from(JUNK)))
        else:
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(damaged(), st.sampled_from(sorted(PROBES)))
def test_damaged_ptx_is_refused_not_crashed(text: str, probe: str) -> None:
    try:
        module = ptx.parse(text)
    except ptx.PtxParseError as e:
        assert e.line >= 1 and e.reason
        return
    try:
        out = instrument(module, PROBES[probe])
    except RewriteError as e:
        assert str(e)
        return
    except ProbeRejected as e:  # e.g. a damaged line now names a shared variable
        assert "probe rejected" in str(e)
        return
    kept = [line for line in out.text.splitlines() if "gtop" not in line]
    assert kept == text.splitlines()
