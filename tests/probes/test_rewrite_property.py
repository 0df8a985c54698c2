"""Property: instrumenting keeps every original line, in order and unchanged, and the
result still assembles; covers predicated exits, bra sites and multi-line statements."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtop.probes.catalog import PROBES
from gtop.probes.engine import maps, ptx
from gtop.probes.engine.probe import ENTRY, Level, Probe, Site, Tracepoint
from gtop.probes.engine.rewrite import instrument

from .helpers import ENTRY_K, PTX_PREAMBLE, run_ptxas

HEAD = (
    PTX_PREAMBLE
    + '.file 1 "k.py"\n\n'
    + ENTRY_K
    + "\tcvta.to.global.u64 %rd2, %rd1;\n\tmov.u32 %r1, %tid.x;\n\tsetp.eq.s32 %p2, %r1, 0;\n"
)
TAIL = "$L_end:\n\tret;\n}\n"
LINES = [
    "\tadd.s32 %r1, %r1, 1;",
    "\tsetp.lt.s32 %p1, %r1, 10;",
    "\t@%p1 ret;",
    "\t@!%p2 exit;",
    "\tld.global.u32 %r2, [%rd2+4];",
    "\t@%p1 st.global.u32 [%rd2], %r2;",
    "\tld.global.v2.f32 {%f1, %f2}, [%rd2+8];",
    "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
    "{%f1,%f2,%f3,%f4}, {%r3,%r4}, {%r5}, {%f1,%f2,%f3,%f4};",
    "\t@%p2 bra $L_end;",
    "\tsetp.ne.s32 %p2, %r2, 0;",
    "\t// a comment with ret; and { braces }",
    "\t.loc\t1 3 0",
    "\tadd.s32 %r3,\n\t\t%r3, %r1;",
    "\t{\n\t.reg .b32 %t;\n\tmov.u32 %t, %r1;\n\t}",
    "",
]


def _branch_counter() -> Probe:
    """A small probe on the ``bra`` class: counts a thread's taken-or-not branches."""
    record = np.dtype([("branches", "<u4"), ("pad", "<u4")])

    def entry(site: Site) -> str:
        return "mov.u32 %gtop_br_n, 0;\n"

    def at_bra(site: Site) -> str:
        return "@%gtop_g add.u32 %gtop_br_n, %gtop_br_n, 1;\n"

    def at_exit(site: Site) -> str:
        return (
            maps.writer(site.level)
            + maps.slot(site, record)
            + maps.store(record, {"branches": "%gtop_br_n"})
        )

    return Probe(
        name="branches",
        doc="branches per thread",
        record=record,
        registers={"%gtop_br_n": ".b32"},
        tracepoints=(
            Tracepoint(ENTRY, entry),
            Tracepoint(r"^bra\b", at_bra, name="bra"),
            Tracepoint("exit", at_exit),
        ),
        levels=(Level.THREAD,),
    )


ALL = [*PROBES.values(), _branch_counter()]


# The same body in a .func with a parameter and a return value, called by the kernel.
FUNC = """\
.func (.param .b32 f_ret) f(.param .u64 f_p0)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<16>;
\t.reg .f32 %f<16>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [f_p0];
\tcvta.to.global.u64 %rd2, %rd1;
\tmov.u32 %r1, %tid.x;
\tsetp.eq.s32 %p2, %r1, 0;
"""
FUNC_TAIL = "$L_end:\n\tst.param.b32 [f_ret], %r1;\n\tret;\n}\n\n"
CALL = """\
\t{
\t.param .b64 param0;
\tst.param.b64 [param0], %rd1;
\t.param .b32 retval0;
\tcall.uni (retval0),
\tf,
\t(param0);
\tld.param.b32 %r2, [retval0];
\t}
"""


@st.composite
def kernels(draw: st.DrawFn) -> str:
    body = draw(st.lists(st.sampled_from(LINES), max_size=25))
    labels = draw(st.lists(st.integers(0, len(body)), max_size=3, unique=True))
    for n, at in enumerate(sorted(labels, reverse=True)):
        body.insert(at, f"$L_a{n}:")
    code = "\n".join(body) + "\n"
    if draw(st.booleans()):  # the body in a .func instead
        top, rest = HEAD.split(".visible .entry", 1)
        return top + FUNC + code + FUNC_TAIL + ".visible .entry" + rest + CALL + TAIL
    return HEAD + code + TAIL


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(source=kernels(), which=st.integers(0, len(ALL) - 1), sample=st.sampled_from([1, 4]))
def test_original_lines_survive_in_order(
    source: str, which: int, sample: int, tmp_path: Path
) -> None:
    probe = ALL[which]
    module = ptx.parse(source)
    result = instrument(module, probe, sample=sample if probe.sampled else 1)
    out = result.text
    kept = [line for line in out.splitlines() if "gtop" not in line]
    assert kept == source.splitlines()
    exits = sum(1 for s in module.kernels[0].instructions() if s.instr.root in ("ret", "exit"))
    untouched = probe.needs_sites and not result.kernels[0].sites  # nothing to record
    if probe.name in ("block_sched", "tensorop", "branches") and not untouched:
        assert out.count("st.global") >= exits
    done = run_ptxas(out, tmp_path)
    assert done.returncode == 0, done.stderr + out
