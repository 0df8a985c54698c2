"""Where block_sched's cost on saxpy goes: variants of the real instrumented PTX.

Usage: python benchmarks/probe_cost_breakdown.py OUT.json [--reps N] [--check]

The nvcc ``saxpy`` kernel (16M threads, 524,288 warps, memory-bound) is instrumented
by gtop's rewriter with block_sched (array map); each variant below is derived from that
text by removing or replacing inserted (``gtop_``) lines only, so the kernel's own
instructions are the same in all of them (checked). A store that a variant must keep
(so ptxas does not delete what feeds it) is predicated on ``gtop_off``, a ``.const`` the
host never sets (0): the predicate is false at run time, unknown to ptxas.

- ``0 original``: the uninstrumented kernel;
- ``1 full``: block_sched as before the 1-D slot shortcut (all 3-D index math);
- ``2 entry_reads``: the entry's %globaltimer + %clock64 reads only;
- ``3 timers``: entry and exit clock reads, no index math, no store;
- ``4 no_store``: everything but the two stores (record, launch word);
- ``5 clock_only``: ``1`` with every %globaltimer read replaced by %clock64;
- ``6 no_index``: ``1`` with the block/warp index math replaced by %smid/%warpid (wrong
  slots, same store): prices the math;
- ``7 flat``: the real probe now (slot from %ctaid.x/%tid.x for a kernel that reads no
  y/z index, with a run-time 1-D launch check);
- ``8 hoisted``: ``1`` with the index and slot math moved to the kernel's entry (after
  the clock reads), where it overlaps the kernel's loads: exit keeps clocks, writer,
  conversion and stores.

Each launch is timed alone with CUDA events (event, launch, event) after resetting the
output, variants interleaved round-robin, two warm-up rounds, median of ``--reps``;
``burst`` is the median per-launch time of 20 back-to-back launches between two events.
``--check`` (no GPU) only builds the variants and assembles each with ptxas, printing
SASS instruction counts. Prints a table of ratios to the original; writes JSON.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gtop.instrument import maps, rewrite  # noqa: E402
from gtop.instrument import ptx as ptx_parser  # noqa: E402
from gtop.instrument.probe import Level, MapKind  # noqa: E402
from gtop.instrument.probes import get  # noqa: E402

NVCC_PTX = ROOT / "tests" / "corpus" / "ptx" / "nvcc_cuda_kernels.ptx"
KERNEL = "saxpy"
N = 1 << 24
BLOCK = 256
WARPS = N // 32
BURST = 20
OFF = "gtop_off"  # .const .u32, never set: a run-time false predicate


class VariantError(RuntimeError):
    """A variant could not be derived, assembled, or gave wrong results."""


def _instrument(flat: bool) -> str:
    """The rewriter's text; ``flat=False`` disables the 1-D slot shortcut."""
    module = ptx_parser.parse(NVCC_PTX.read_text())
    saved = rewrite.flat_kernel
    if not flat:
        rewrite.flat_kernel = lambda module, fn: False
    try:
        inst = rewrite.instrument(module, get("block_sched"), f"^{KERNEL}$", map_kind=MapKind.ARRAY)
    finally:
        rewrite.flat_kernel = saved
    return inst.text


class Text:
    """The saxpy kernel's lines of an instrumented module, edited in place."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        start = next(i for i, ln in enumerate(self.lines) if f".entry {KERNEL}(" in ln)
        self.end = next(i for i in range(start, len(self.lines)) if self.lines[i] == "}")
        self.start = start
        decl = next(i for i, ln in enumerate(self.lines) if ln.startswith(".visible .const"))
        self.lines.insert(decl, f".visible .const .align 4 .u32 {OFF};")
        self.start += 1
        self.end += 1

    def text(self) -> str:
        return "\n".join(self.lines)

    def _find(self, block: list[str], nth: int = 0) -> int:
        body = [ln.strip() for ln in self.lines]
        hits = [i for i in range(self.start, self.end) if body[i : i + len(block)] == block]
        if len(hits) <= nth:
            raise VariantError(f"probe text changed: not found: {block[:3]}...")
        return hits[nth]

    def replace(self, old: str, new: str) -> None:
        """Replace the consecutive (stripped) lines ``old`` inside the kernel."""
        block = [ln.strip() for ln in old.strip().splitlines()]
        at = self._find(block)
        repl = ["\t" + ln.strip() for ln in new.strip().splitlines() if ln.strip()]
        self.lines[at : at + len(block)] = repl
        self.end += len(repl) - len(block)

    def exit_block(self) -> tuple[int, int]:
        """[first, last) line indices of the exit snippet (before ``ret;``)."""
        first = self._find(["mov.pred %gtop_g, 1;"])
        last = next(i for i in range(first, self.end) if self.lines[i].strip() == "ret;")
        return first, last

    def set_exit(self, code: str) -> None:
        first, last = self.exit_block()
        repl = ["\t" + ln.strip() for ln in code.strip().splitlines() if ln.strip()]
        self.lines[first:last] = repl
        self.end += len(repl) - (last - first)

    def exit_lines(self) -> list[str]:
        first, last = self.exit_block()
        return [ln.strip() for ln in self.lines[first:last]]


ENTRY = "mov.u64 %gtop_bs_t0, %globaltimer;\nmov.u64 %gtop_bs_c0, %clock64;"
OFF_PRED = f"ld.const.u32 %gtop_rcap, [{OFF}];\nsetp.ne.u32 %gtop_of, %gtop_rcap, 0;\n"
# the probe's ids (3-D: no .reqntid) less the SM id, and its warps per block, from maps
IDS_3D = maps.ids().removeprefix("mov.u32 %gtop_smid, %smid;\n")
PER_BLOCK = maps.per_block(Level.WARP)
SLOT = """\
mad.lo.u32 %gtop_s, %gtop_blk, %gtop_x, %gtop_wid;
setp.lt.and.u32 %gtop_ok, %gtop_s, %gtop_cap, %gtop_lead;
ld.const.u64 %gtop_a, [gtop_buf];
mad.wide.u32 %gtop_a, %gtop_s, 16, %gtop_a;"""
RECORD_STORE = "@%gtop_ok st.global.v2.u64 [%gtop_a], {%gtop_bs_t0, %gtop_w1};"
LAUNCH_STORE = "@%gtop_wl st.global.v4.u32 [gtop_launch], {%gtop_x, %gtop_r, %gtop_y, %gtop_x};"


def variants() -> dict[str, tuple[str | None, str]]:
    """name -> (PTX text, or None for the original module; what it isolates)."""
    full = _instrument(flat=False)
    out: dict[str, tuple[str | None, str]] = {
        "0 original": (None, "uninstrumented kernel"),
        "1 full": (Text(full).text(), "block_sched, 3-D index math (before the shortcut)"),
    }

    t = Text(full)
    t.set_exit(
        OFF_PRED + "ld.const.u64 %gtop_a, [gtop_buf];\n"
        "@%gtop_of st.global.v2.u64 [%gtop_a], {%gtop_bs_t0, %gtop_bs_c0};"
    )
    out["2 entry_reads"] = (t.text(), "entry %globaltimer+%clock64 reads only")

    t = Text(full)
    t.set_exit(
        "mov.u64 %gtop_bs_t1, %globaltimer;\nmov.u64 %gtop_bs_c1, %clock64;\n"
        + OFF_PRED
        + "ld.const.u64 %gtop_a, [gtop_buf];\n"
        "@%gtop_of st.global.v2.u64 [%gtop_a], {%gtop_bs_t0, %gtop_bs_t1};\n"
        "@%gtop_of st.global.v2.u64 [%gtop_a+16], {%gtop_bs_c0, %gtop_bs_c1};"
    )
    out["3 timers"] = (t.text(), "entry+exit clock reads; no index math, no store")

    t = Text(full)
    t.replace("mov.pred %gtop_g, 1;", "mov.pred %gtop_g, 1;\n" + OFF_PRED)
    t.replace(RECORD_STORE, RECORD_STORE.replace("@%gtop_ok", "@%gtop_lo_p"))
    t.replace(LAUNCH_STORE, LAUNCH_STORE.replace("@%gtop_wl", "@%gtop_hi_p"))
    t.replace(
        "mov.pred %gtop_g, 1;",
        "mov.pred %gtop_g, 1;\n.reg .pred %gtop_lo_p;\n.reg .pred %gtop_hi_p;",
    )
    # both stores on (their own predicate) and gtop_off: all their inputs stay live
    t.replace(
        "cvt.u32.u64 %gtop_z, %gtop_bs_t1;",
        "cvt.u32.u64 %gtop_z, %gtop_bs_t1;\nand.pred %gtop_lo_p, %gtop_ok, %gtop_of;",
    )
    t.replace(
        "mov.u32 %gtop_r, %gtop_x;",
        "mov.u32 %gtop_r, %gtop_x;\nand.pred %gtop_hi_p, %gtop_wl, %gtop_of;",
    )
    out["4 no_store"] = (t.text(), "all probe math, both stores predicated off at run time")

    out["5 clock_only"] = (
        Text(full).text().replace("%globaltimer", "%clock64"),
        "full with %globaltimer reads replaced by %clock64",
    )

    t = Text(full)
    t.replace(
        IDS_3D,
        "mov.u32 %gtop_blk, %smid;\nmov.u32 %gtop_wid, %warpid;",
    )
    t.replace(PER_BLOCK, "mov.u32 %gtop_x, 64;")
    out["6 no_index"] = (t.text(), "full with block/warp index math -> %smid*64+%warpid")

    out["7 flat"] = (Text(_instrument(flat=True)).text(), "real probe: 1-D slot shortcut")

    t = Text(full)
    t.replace(maps.ids(), "")
    t.replace("ld.const.u32 %gtop_cap, [gtop_cap];", "")
    t.replace(PER_BLOCK, "")
    t.replace(SLOT, "and.pred %gtop_ok, %gtop_of, %gtop_lead;\nmov.u32 %gtop_x, %gtop_rper;")
    t.replace(
        ENTRY,
        ENTRY
        + "\n"
        + maps.ids()
        + "ld.const.u32 %gtop_cap, [gtop_cap];\n"
        + PER_BLOCK
        + "mov.u32 %gtop_rper, %gtop_x;\n"
        + SLOT.replace(
            "setp.lt.and.u32 %gtop_ok, %gtop_s, %gtop_cap, %gtop_lead;",
            "setp.lt.u32 %gtop_of, %gtop_s, %gtop_cap;",
        ),
    )
    out["8 hoisted"] = (t.text(), "full with index/slot math at entry; clocks+store at exit")
    return out


def _original_kernel_lines(text: str) -> list[str]:
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if f".entry {KERNEL}(" in ln)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return lines[start:end]


def check_intact(text: str) -> None:
    """The kernel's own lines appear unchanged and in order; inserted lines are gtop's."""
    want = _original_kernel_lines(NVCC_PTX.read_text())
    got = [ln for ln in _original_kernel_lines(text) if "gtop" not in ln]
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
    for name, (text, what) in variants().items():
        info: dict = {"what": what}
        if text is not None:
            check_intact(text)
            info.update(assemble(text, check_only))
        else:
            info.update(assemble(NVCC_PTX.read_text(), check_only))
        out[name] = {**info, "text": text}
        print(
            f"{name:16s} sass={info.get('sass_instructions', '?'):>3} "
            f"s2r={info.get('s2r', '?'):>2}  {what}",
            file=sys.stderr,
        )
    return out


def measure(built: dict[str, dict], reps: int) -> dict[str, dict]:
    import numpy as np
    import torch
    from gpu_workloads import ptr

    from gtop.instrument.rewrite import read_header
    from gtop.instrument.runtime import ProbeBuffers, launch, load_ptx

    torch.manual_seed(0)
    x = torch.randn(N, device="cuda")
    y0 = torch.randn(N, device="cuda")
    y = y0.clone()
    args = [np.int32(N), np.float32(2.5), ptr(x), ptr(y)]
    want = None  # the uninstrumented kernel's output (its fma rounds once; torch's a*x+y twice)
    mods = {}
    for name, info in built.items():
        text = info["text"] or NVCC_PTX.read_text()
        module = load_ptx(text)
        bufs = None
        if info["text"] is not None:
            header = read_header(text)
            assert header is not None
            bufs = ProbeBuffers(module, header, WARPS)
        mods[name] = (module, bufs)

    def go(module: object) -> None:
        launch(module, KERNEL, (N // BLOCK, 1, 1), (BLOCK, 1, 1), args)

    times: dict[str, list[float]] = {n: [] for n in mods}
    burst: dict[str, list[float]] = {n: [] for n in mods}
    result: dict[str, dict] = {}
    for rep in range(reps + 2):
        order = list(mods) if rep % 2 == 0 else list(reversed(mods))
        for name in order:
            module, bufs = mods[name]
            y.copy_(y0)
            if bufs is not None:
                bufs.reset(clear=False)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            go(module)
            e.record()
            e.synchronize()
            if rep == 0:
                if want is None:
                    want = y.clone()
                if not torch.equal(y, want):
                    raise VariantError(f"{name}: saxpy results changed")
                if bufs is not None:
                    bufs.reset(clear=True)
                    go(module)
                    torch.cuda.synchronize()
                    rec, dropped = bufs.read()
                    result[name] = {"records": len(rec), "dropped": int(dropped)}
                    if name in ("1 full", "7 flat"):
                        pairs = set(zip(rec["block"].tolist(), rec["warp"].tolist(), strict=True))
                        if len(rec) != WARPS or len(pairs) != WARPS or dropped:
                            raise VariantError(
                                f"{name}: {len(rec)} records, {len(pairs)} distinct "
                                f"(block, warp), {dropped} dropped; want {WARPS}"
                            )
            if rep >= 2:
                times[name].append(s.elapsed_time(e))
                s.record()
                for _ in range(BURST):
                    go(module)
                e.record()
                e.synchronize()
                burst[name].append(s.elapsed_time(e) / BURST)
    base, base_b = statistics.median(times["0 original"]), statistics.median(burst["0 original"])
    for name in mods:
        med, med_b = statistics.median(times[name]), statistics.median(burst[name])
        result.setdefault(name, {}).update(
            median_ms=med,
            ratio=med / base,
            burst_ms=med_b,
            burst_ratio=med_b / base_b,
            p10_p90_ms=[
                float(np.percentile(times[name], 10)),
                float(np.percentile(times[name], 90)),
            ],
        )
    for _, bufs in mods.values():
        if bufs is not None:
            bufs.close()
    return result


def table(built: dict[str, dict], res: dict[str, dict]) -> str:
    lines = [
        "| variant | SASS instrs | S2R | median ms | ratio | burst ratio | isolates |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for name, info in built.items():
        r = res.get(name, {})
        lines.append(
            f"| {name} | {info.get('sass_instructions', '?')} | {info.get('s2r', '?')} | "
            f"{r.get('median_ms', float('nan')):.4f} | {r.get('ratio', float('nan')):.3f}x | "
            f"{r.get('burst_ratio', float('nan')):.3f}x | {info['what']} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="JSON file to write")
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--check", action="store_true", help="build and ptxas only (no GPU)")
    parser.add_argument("--watchdog", type=float, default=110)
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    t0 = time.perf_counter()
    built = build(args.check)
    res: dict[str, dict] = {}
    meta: dict = {"command": " ".join(sys.argv), "reps": args.reps, "burst": BURST}
    if not args.check:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import torch

        torch.zeros(1, device="cuda")
        meta["gpu"] = torch.cuda.get_device_name()
        res = measure(built, args.reps)
    md = table(built, res)
    print(md)
    meta["seconds"] = time.perf_counter() - t0
    meta["variants"] = {
        n: {k: v for k, v in info.items() if k != "text"} | res.get(n, {})
        for n, info in built.items()
    }
    meta["table_markdown"] = md
    with open(args.out, "w") as f:
        json.dump(meta, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
