"""The verifier rejects each forbidden kind of probe, with a clear message."""

from __future__ import annotations

import numpy as np
import pytest

from gtop.probes.catalog import PROBES
from gtop.probes.engine import ptx
from gtop.probes.engine.probe import ENTRY, Probe, Tracepoint
from gtop.probes.engine.rewrite import instrument
from gtop.probes.engine.verify import ProbeRejected, verify

from .helpers import CORPUS

OWN = {"%gtop_a": ".b64", "%gtop_x": ".b32", "%gtop_g": ".pred"}


def _probe(snippet: str) -> Probe:
    return Probe(
        name="bad",
        doc="a probe the verifier must refuse",
        record=np.dtype([("x", "<u8")]),
        registers={},
        tracepoints=(Tracepoint(ENTRY, lambda site: snippet),),
    )


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        ("mov.u32 %r1, %clock;", "writes an existing register %r1"),
        ("setp.eq.u32 %p1|%gtop_g, %gtop_x, 0;", "writes an existing register %p1"),
        ("ld.global.v2.u32 {%gtop_x, %r7}, [%gtop_a];", "writes an existing register %r7"),
        ("bra $L__BB0_1;", "branches"),
        ("@%gtop_g ret;", "branches"),
        ("call.uni foo, ();", "branches"),
        ("st.shared.u32 [%gtop_a], %gtop_x;", "touches shared memory"),
        ("ld.shared::cta.u32 %gtop_x, [%gtop_a];", "touches shared memory"),
        ("mbarrier.arrive.shared.b64 %gtop_a, [%gtop_a];", "touches shared memory"),
        ("mov.u64 %gtop_a, global_smem;", "uses shared variable global_smem"),
    ],
)
def test_rejects(snippet: str, message: str) -> None:
    with pytest.raises(ProbeRejected, match="probe rejected") as err:
        verify(snippet, OWN, {"global_smem"})
    assert message in str(err.value)


def test_rejects_labels() -> None:
    with pytest.raises(ProbeRejected, match="only instructions"):
        verify("L1:\nmov.u32 %gtop_x, 1;", OWN)


def test_accepts_own_registers_and_global_memory() -> None:
    verify("ld.global.u64 %gtop_a, [gtop_buf];\n@%gtop_g st.global.u32 [%gtop_a], %gtop_x;", OWN)


@pytest.mark.parametrize(
    "snippet",
    ["add.s32 %r1, %r1, 1;", "bra.uni $L__BB0_1;", "st.shared.u32 [global_smem], %gtop_x;"],
)
def test_rewriter_refuses_bad_probes_on_real_ptx(snippet: str) -> None:
    module = ptx.parse((CORPUS / "triton_softmax.ptx").read_text())
    with pytest.raises(ProbeRejected):
        instrument(module, _probe(snippet))


def test_shipped_probes_pass_on_real_ptx() -> None:
    module = ptx.parse((CORPUS / "triton_matmul_wgmma.ptx").read_text())
    for probe in PROBES.values():
        instrument(module, probe)
