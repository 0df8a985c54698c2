"""Where block_sched's cost on saxpy goes: the probe against pieces of it.

Usage: python benchmarks/probe_cost_breakdown.py OUT.json [--reps N] [--check]

The nvcc ``saxpy`` kernel (16M threads, 524,288 warps of one load/store pair each,
memory-bound) is instrumented by gtop's rewriter with block_sched (array map) and with
probes made of parts of it (same entry and exit sites, other snippets), so the kernel's
own instructions are the same in every variant (checked). A snippet whose store must
not run (but whose inputs ptxas must keep) predicates it on a comparison that is false
at run time and unknown to ptxas.

- ``original``: the uninstrumented kernel;
- ``block_sched``: the probe as gtop ships it;
- ``entry_reads``: only the entry's %globaltimer + %clock64 reads;
- ``exit_join``: only an exit snippet that stores nothing (the rewriter's exit join);
- ``exit_clocks_store16``: exit clock reads, writer lane, slot and one 16-byte store per
  warp (no SM id, packing or launch word);
- ``store16``: writer lane, slot and one 16-byte store per warp of constants, no clocks;
- ``store8``: the same with an 8-byte store;
- ``store16_stride32``: ``store16`` with records 32 bytes apart, so no two warps write
  into one 32-byte sector;
- ``store32``: the two lowest active lanes each store 16 bytes: one whole sector per
  warp (no partial-sector write for L2 to merge);
- ``store16_l2``: ``store16`` with every warp of an SM writing one 128-byte line of its
  own, which stays in L2 (the store's request cost, without DRAM bytes);
- ``+smid``, ``+check``, ``+pack``: ``exit_clocks_store16`` plus one piece of the probe's
  exit: the ``%smid`` read (into the stored word), the flat kernel's 1-D launch check (in
  the store's predicate), or the clock packing (``cvt.rn.f32.u64`` and its bit moves);
- ``smid_at_entry``: the probe with ``%smid`` read at kernel entry instead of exit.

Timing as ``probe_overhead.py``: each launch alone (event, launch, event) after its
output reset and a 256 MiB write that leaves L2 holding nothing of the previous
variant's; variants interleaved in an order that reverses every round, two warm-up
rounds, median and quartiles of ``--reps`` per variant, as ratios to the original, in
``--passes`` passes. ``--check`` (no GPU) only builds the variants and assembles each
with ptxas, printing SASS instruction counts. Prints a table; writes JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gtop.probes.catalog import block_sched  # noqa: E402
from gtop.probes.engine import maps  # noqa: E402
from gtop.probes.engine import ptx as ptx_parser  # noqa: E402
from gtop.probes.engine.probe import ENTRY, EXIT, MapKind, Probe, Site, Tracepoint  # noqa: E402
from gtop.probes.engine.rewrite import instrument  # noqa: E402

NVCC_PTX = ROOT / "tests" / "corpus" / "ptx" / "nvcc_cuda_kernels.ptx"
KERNEL = "saxpy"
N = 1 << 24
BLOCK = 256
WARPS = N // 32
L2_FLUSH_BYTES = 256 << 20
NEVER = "setp.eq.u64 %gtop_ok, %gtop_bs_t0, 12345;\n"  # %globaltimer is never 12345


class VariantError(RuntimeError):
    """A variant could not be built or assembled, or changed saxpy's results."""


def _slot_and_writer(site: Site, stride: int) -> str:
    """Block, warp, writer lane and record address at ``stride`` bytes per warp."""
    return (
        "mov.u32 %gtop_blk, %ctaid.x;\nmov.u32 %gtop_tid, %tid.x;\n"
        "shr.u32 %gtop_wid, %gtop_tid, 5;\n"
        + maps.writer(site.level, unguarded=True)
        + maps.slot(site, block_sched.PACKED, count_drops=False).replace(
            "%gtop_s, 16,", f"%gtop_s, {stride},"
        )
    )


def _entry_reads(site: Site) -> str:
    return (
        NEVER + "ld.const.u64 %gtop_a, [gtop_buf];\n"
        "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_bs_t0, %gtop_bs_c0};\n"
    )


def _exit_join(site: Site) -> str:
    return (
        "mov.u32 %gtop_x, %tid.x;\nsetp.eq.u32 %gtop_ok, %gtop_x, 99999;\n"
        "ld.const.u64 %gtop_a, [gtop_buf];\n@%gtop_ok st.global.u32 [%gtop_a], %gtop_x;\n"
    )


def _exit_clocks_store16(site: Site) -> str:
    return (
        "mov.u64 %gtop_bs_t1, %globaltimer;\nmov.u64 %gtop_bs_c1, %clock64;\n"
        + _slot_and_writer(site, 16)
        + "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_bs_t1, %gtop_bs_c1};\n"
    )


def _store16(site: Site) -> str:
    return (
        _slot_and_writer(site, 16) + "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_a, %gtop_a};\n"
    )


def _store8(site: Site) -> str:
    return _slot_and_writer(site, 8) + "@%gtop_ok st.global.u64 [%gtop_a], %gtop_a;\n"


def _store16_stride32(site: Site) -> str:
    return (
        _slot_and_writer(site, 32) + "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_a, %gtop_a};\n"
    )


def _store32(site: Site) -> str:
    """The two lowest active lanes each store 16 B: one whole 32-byte sector per warp."""
    lead = "setp.eq.u32 %gtop_lead, %gtop_x, 0;\n"
    two = "popc.b32 %gtop_r, %gtop_x;\nsetp.lt.u32 %gtop_lead, %gtop_r, 2;\n"
    text = _slot_and_writer(site, 32)
    if lead not in text:
        raise VariantError("maps.writer no longer picks its lane as expected")
    return (
        text.replace(lead, two)
        + "mad.wide.u32 %gtop_a, %gtop_r, 16, %gtop_a;\n"
        + "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_a, %gtop_a};\n"
    )


def _store16_l2(site: Site) -> str:
    return (
        "mov.u32 %gtop_smid, %smid;\n"
        + maps.writer(site.level, unguarded=True)
        + "ld.const.u32 %gtop_cap, [gtop_cap];\n"
        "setp.ne.and.u32 %gtop_ok, %gtop_cap, 0, %gtop_lead;\n"
        "ld.const.u64 %gtop_a, [gtop_buf];\nmad.wide.u32 %gtop_a, %gtop_smid, 128, %gtop_a;\n"
        "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_a, %gtop_a};\n"
    )


SMID = "mov.u32 %gtop_smid, %smid;\n"
CLOCKS = "mov.u64 %gtop_bs_t1, %globaltimer;\nmov.u64 %gtop_bs_c1, %clock64;\n"
STORE_T1_W1 = "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_bs_t1, %gtop_w1};\n"


def _plus_smid(site: Site) -> str:
    return (
        CLOCKS
        + "mov.u32 %gtop_smid, %smid;\n"
        + _slot_and_writer(site, 16)
        + "cvt.u32.u64 %gtop_y, %gtop_bs_c1;\nbfi.b32 %gtop_y, %gtop_smid, %gtop_y, 0, 8;\n"
        "cvt.u32.u64 %gtop_z, %gtop_bs_t1;\nmov.b64 %gtop_w1, {%gtop_z, %gtop_y};\n" + STORE_T1_W1
    )


def _plus_check(site: Site) -> str:
    return (
        CLOCKS
        + maps.ids(site, flat=True).replace(SMID, "")
        + maps.writer(site.level, unguarded=True)
        + maps.slot(site, block_sched.PACKED, count_drops=False)
        + "mov.b64 %gtop_w1, %gtop_bs_c1;\nand.pred %gtop_ok, %gtop_ok, %gtop_of;\n"
        + STORE_T1_W1
    )


def _plus_pack(site: Site) -> str:
    return (
        CLOCKS + _slot_and_writer(site, 16) + "sub.u64 %gtop_bs_c1, %gtop_bs_c1, %gtop_bs_c0;\n"
        "cvt.rn.f32.u64 %gtop_bs_f, %gtop_bs_c1;\nmov.b32 %gtop_y, %gtop_bs_f;\n"
        "mad.lo.u32 %gtop_y, %gtop_y, 8, 1;\ncvt.u32.u64 %gtop_z, %gtop_bs_t1;\n"
        "mov.b64 %gtop_w1, {%gtop_z, %gtop_y};\n" + STORE_T1_W1
    )


def _entry_with_smid(site: Site) -> str:
    return block_sched.PROBE.tracepoints[0].snippet(site) + SMID


def _exit_without_smid(site: Site) -> str:
    text = block_sched.PROBE.tracepoints[1].snippet(site)
    if SMID not in text:
        raise VariantError("block_sched's exit no longer reads %smid as expected")
    return text.replace(SMID, "")


def _with(entry: Callable[[Site], str] | None, exit_: Callable[[Site], str]) -> Probe:
    probe = block_sched.PROBE
    first = entry or probe.tracepoints[0].snippet
    return dataclasses.replace(
        probe, tracepoints=(Tracepoint(ENTRY, first), Tracepoint(EXIT, exit_))
    )


VARIANTS: dict[str, tuple[Probe | None, str]] = {
    "original": (None, "uninstrumented kernel"),
    "block_sched": (block_sched.PROBE, "the probe as shipped"),
    "entry_reads": (_with(None, _entry_reads), "entry clock reads only"),
    "exit_join": (_with(lambda s: "", _exit_join), "an exit snippet that stores nothing"),
    "exit_clocks_store16": (
        _with(lambda s: "", _exit_clocks_store16),
        "exit clocks + writer + slot + 16 B store",
    ),
    "store16": (_with(lambda s: "", _store16), "writer + slot + 16 B store of constants"),
    "store8": (_with(lambda s: "", _store8), "writer + slot + 8 B store of constants"),
    "store16_stride32": (
        _with(lambda s: "", _store16_stride32),
        "store16 with 32 B between warps' records (no sector shared by two warps)",
    ),
    "store32": (
        _with(lambda s: "", _store32),
        "two lanes store 16 B each: one whole 32 B sector per warp",
    ),
    "store16_l2": (_with(lambda s: "", _store16_l2), "16 B store to one L2-resident line per SM"),
    "+smid": (_with(lambda s: "", _plus_smid), "exit_clocks_store16 + the %smid read"),
    "+check": (_with(lambda s: "", _plus_check), "exit_clocks_store16 + the 1-D launch check"),
    "+pack": (_with(lambda s: "", _plus_pack), "exit_clocks_store16 + the clock packing"),
    "smid_at_entry": (_with(_entry_with_smid, _exit_without_smid), "the probe, %smid at entry"),
}


def build_text(probe: Probe | None) -> str:
    src = NVCC_PTX.read_text()
    if probe is None:
        return src
    text = instrument(ptx_parser.parse(src), probe, f"^{KERNEL}$", map_kind=MapKind.ARRAY).text
    check_intact(text)
    return text


def _kernel_lines(text: str) -> list[str]:
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if f".entry {KERNEL}(" in ln)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return lines[start:end]


def check_intact(text: str) -> None:
    """The kernel's own lines appear unchanged and in order; inserted lines are gtop's."""
    want = _kernel_lines(NVCC_PTX.read_text())
    got = [ln for ln in _kernel_lines(text) if "gtop" not in ln]
    if got != want:
        raise VariantError("variant changed the kernel's own instructions")


def _tool(name: str) -> str | None:
    """The tool on PATH (a CUDA 13 ptxas takes PTX 9.0), else Triton's copy."""
    if found := shutil.which(name):
        return found
    try:
        import triton
    except ImportError:
        return None
    cand = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    return str(cand) if cand.exists() else None


def assemble(text: str, strict: bool, arch: str = "sm_90a") -> dict:
    """ptxas the text (raises VariantError on failure); SASS counts when cuobjdump is
    there: instructions of saxpy up to its last EXIT, and its special-register reads.
    Not ``strict``: a ptxas too old for the PTX version is noted, not fatal."""
    ptxas = _tool("ptxas")
    if ptxas is None:
        raise VariantError("no ptxas")
    with tempfile.TemporaryDirectory() as d:
        src, cubin = Path(d, "k.ptx"), Path(d, "k.cubin")
        src.write_text(text)
        r = subprocess.run(
            [ptxas, f"-arch={arch}", str(src), "-o", str(cubin)], capture_output=True, text=True
        )
        if r.returncode and "Unsupported .version" in r.stderr and not strict:
            return {"sass_note": r.stderr.strip()[:200]}  # the driver's JIT still checks
        if r.returncode:
            raise VariantError(f"ptxas failed: {r.stderr.strip()[:2000]}")
        dump = _tool("cuobjdump")
        if dump is None:
            return {}
        sass = subprocess.run(
            [dump, "-sass", "-fun", KERNEL, str(cubin)], capture_output=True, text=True
        ).stdout
    ins = [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", sass)]
    last_exit = max((i for i, s in enumerate(ins) if s.endswith("EXIT")), default=len(ins) - 1)
    body = ins[: last_exit + 1]
    return {
        "sass_instructions": len(body),
        "s2r": sum(1 for s in body if re.search(r"\bS2U?R\b|CS2R", s)),
        "sass": body,
    }


def build(check_only: bool) -> dict[str, dict]:
    out = {}
    for name, (probe, what) in VARIANTS.items():
        text = build_text(probe)
        info = {"what": what, "text": text, **assemble(text, check_only)}
        out[name] = info
        print(
            f"{name:20s} sass={info.get('sass_instructions', '?'):>3} "
            f"s2r={info.get('s2r', '?'):>2}  {what}",
            file=sys.stderr,
        )
    return out


def measure(built: dict[str, dict], reps: int) -> dict[str, dict]:
    """One pass: per variant, the median and quartiles of ``reps`` launches / original's."""
    import numpy as np
    import torch
    from gpu_workloads import ptr

    from gtop.probes.engine.driver import ProbeBuffers, launch, load_ptx
    from gtop.probes.engine.rewrite import read_header

    torch.manual_seed(0)
    x = torch.randn(N, device="cuda")
    y0 = torch.randn(N, device="cuda")
    y = y0.clone()
    args = [np.int32(N), np.float32(2.5), ptr(x), ptr(y)]
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    mods = {}
    for name, info in built.items():
        module = load_ptx(info["text"])
        header = read_header(info["text"])
        # stride-32 variants address twice the 16-byte records' bytes
        records = WARPS * (2 if name.startswith(("store32", "store16_stride32")) else 1)
        mods[name] = (
            module,
            ProbeBuffers(module, VARIANTS[name][0], header, records) if header else None,
        )
    want = None  # the uninstrumented kernel's output (its fma rounds once)
    times: dict[str, list[float]] = {n: [] for n in mods}
    for rep in range(reps + 2):
        for name in mods if rep % 2 == 0 else reversed(list(mods)):
            module, bufs = mods[name]
            y.copy_(y0)
            if bufs is not None:
                bufs.reset(clear=False)
            flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            launch(module, KERNEL, (N // BLOCK, 1, 1), (BLOCK, 1, 1), args)
            e.record()
            e.synchronize()
            if want is None:
                want = y.clone()
            if not torch.equal(y, want):
                raise VariantError(f"{name}: saxpy results changed")
            if rep >= 2:
                times[name].append(s.elapsed_time(e))
    for _, bufs in mods.values():
        if bufs is not None:
            bufs.close()
    base = statistics.median(times["original"])
    out = {}
    for name, t in times.items():
        q1, _, q3 = statistics.quantiles(t, n=4)
        out[name] = {"median_ms": statistics.median(t), "ratio": statistics.median(t) / base}
        out[name]["iqr"] = [q1 / base, q3 / base]
    return out


def table(built: dict[str, dict], passes: list[dict[str, dict]]) -> str:
    head = " | ".join(f"pass {i + 1}" for i in range(len(passes)))
    lines = [
        f"| variant | SASS instrs | {head} | what it keeps |",
        "|---|---:|" + "---:|" * len(passes) + "---|",
    ]
    for name, info in built.items():
        cells = " | ".join(f"{p[name]['ratio']:.3f}x" for p in passes)
        sass = info.get("sass_instructions", "?")
        lines.append(f"| {name} | {sass} | {cells} | {info['what']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="build and ptxas only (no GPU)")
    parser.add_argument("--watchdog", type=float, default=300)
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    t0 = time.perf_counter()
    built = build(args.check)
    meta: dict = {"command": " ".join(sys.argv), "reps": args.reps}
    passes: list[dict[str, dict]] = []
    if not args.check:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import torch

        meta["gpu"] = torch.cuda.get_device_name()
        passes = [measure(built, args.reps) for _ in range(args.passes)]
        md = table(built, passes)
        print(md)
        meta["table_markdown"] = md
    meta["seconds"] = time.perf_counter() - t0
    meta["variants"] = {
        n: {k: v for k, v in info.items() if k != "text"} | {"passes": [p[n] for p in passes]}
        for n, info in built.items()
    }
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
