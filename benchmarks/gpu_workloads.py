"""GPU workloads for the probe tests and benchmarks: corpus kernels launched from PTX.

Every workload launches one kernel of a PTX module (the nvcc corpus file, or a Triton
corpus kernel compiled on this machine) through ``cuModuleLoadData``/``cuLaunchKernel``,
so the original and the instrumented PTX run through the same path. Needs torch (for the
data), triton and cuda-bindings.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from triton_kernels import CORPUS, compile_kernel  # noqa: E402

from gtop.probes.catalog import get  # noqa: E402
from gtop.probes.engine import ptx as ptx_parser  # noqa: E402
from gtop.probes.engine.driver import ProbeBuffers, launch, load_ptx  # noqa: E402
from gtop.probes.engine.probe import Level, MapKind  # noqa: E402
from gtop.probes.engine.rewrite import Instrumented, instrument, read_header  # noqa: E402

NVCC_PTX = ROOT / "tests" / "corpus" / "ptx" / "nvcc_cuda_kernels.ptx"


def ptr(t: torch.Tensor) -> np.uint64:
    return np.uint64(t.data_ptr())


def spans(**tensors: torch.Tensor) -> dict[str, tuple[int, int]]:
    """Kernel-argument name -> (address, bytes), for labelling DMAT rows."""
    return {k: (t.data_ptr(), t.numel() * t.element_size()) for k, t in tensors.items()}


@dataclass
class Workload:
    """One kernel launch with its inputs; ``outputs`` are compared between runs."""

    name: str
    ptx: str
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list[np.generic]
    outputs: list[torch.Tensor]
    reference: Callable[[], list[torch.Tensor]]  # torch's answer, to check the launch path
    exact: bool  # probed results must be bitwise identical (else within rounding)
    shared: int = 0
    prepare: Callable[[], None] = lambda: None  # reset in-place outputs before a run
    keep: list = field(default_factory=list)
    pointers: dict[str, tuple[int, int]] = field(default_factory=dict)  # arg -> (addr, bytes)

    @property
    def warps(self) -> int:
        blocks = self.grid[0] * self.grid[1] * self.grid[2]
        return blocks * -(-self.block[0] * self.block[1] * self.block[2] // 32)

    def run(self, module: object, stream: int = 0, prepare: bool = True) -> None:
        """Launch on ``module``; first reset in-place outputs unless ``prepare`` is False."""
        if prepare:
            self.prepare()
        launch(module, self.kernel, self.grid, self.block, self.args, self.shared, stream)

    def instrument(
        self,
        probe: str,
        sample: int = 1,
        level: str | None = None,
        map_kind: str | None = None,
    ) -> Instrumented:
        module = ptx_parser.parse(self.ptx)
        return instrument(
            module,
            get(probe),
            kernel=f"^{self.kernel}$",
            level=Level(level) if level else None,
            map_kind=MapKind(map_kind) if map_kind else None,
            sample=sample,
        )


def _nvcc(name: str, **kw) -> Workload:
    return Workload(name=name, ptx=NVCC_PTX.read_text(), kernel=name, **kw)


def _triton(corpus_name: str, grid: tuple[int, int, int], user_args: list[np.generic], **kw):
    entry = next(e for e in CORPUS if e.name == corpus_name)
    compiled = compile_kernel(entry, torch.cuda.get_device_capability()[0] * 10)
    md = compiled.metadata
    programs = grid[0] * grid[1] * grid[2]
    keep = []
    scratch = np.uint64(0)
    if md.global_scratch_size:
        buf = torch.empty(md.global_scratch_size * programs + 256, dtype=torch.uint8, device="cuda")
        keep.append(buf)
        scratch = np.uint64((buf.data_ptr() + 255) // 256 * 256)
    return Workload(
        name=f"triton_{corpus_name}",
        ptx=compiled.asm["ptx"],
        kernel=compiled.name,
        grid=grid,
        block=(md.num_warps * 32, 1, 1),
        args=[*user_args, scratch, np.uint64(0)],
        shared=md.shared,
        keep=keep,
        **kw,
    )


def workloads() -> list[Workload]:
    """All workloads, with fresh inputs (seeded)."""
    torch.manual_seed(0)
    dev = "cuda"
    out: list[Workload] = []

    n = 1 << 24
    x = torch.randn(n, device=dev)
    y0 = torch.randn(n, device=dev)
    y = y0.clone()
    out.append(
        _nvcc(
            "saxpy",
            grid=(n // 256, 1, 1),
            block=(256, 1, 1),
            args=[np.int32(n), np.float32(2.5), ptr(x), ptr(y)],
            outputs=[y],
            reference=lambda: [2.5 * x + y0],
            exact=True,
            prepare=lambda: y.copy_(y0),
            keep=[x, y0],
        )
    )

    data = torch.randint(-5, 300, (1 << 22,), device=dev, dtype=torch.int32)
    hist = torch.zeros(256, device=dev, dtype=torch.int32)
    out.append(
        _nvcc(
            "histogram",
            grid=(264, 1, 1),
            block=(256, 1, 1),
            args=[ptr(data), np.int32(data.numel()), np.int32(256), ptr(hist)],
            outputs=[hist],
            reference=lambda: [torch.bincount(data.clamp(0, 255), minlength=256).int()],
            exact=True,
            shared=256 * 4,
            prepare=hist.zero_,
            keep=[data],
        )
    )

    xi = torch.randint(-1000, 1000, (1 << 22,), device=dev, dtype=torch.int32)
    total = torch.zeros(1, device=dev, dtype=torch.int64)
    out.append(
        _nvcc(
            "warp_sum",
            grid=(xi.numel() // 256, 1, 1),
            block=(256, 1, 1),
            args=[ptr(xi), np.int32(xi.numel()), ptr(total)],
            outputs=[total],
            reference=lambda: [xi.long().sum().reshape(1)],
            exact=True,
            prepare=total.zero_,
        )
    )

    m = 2048
    a = (torch.randn(m, m, device=dev) / 8).half()
    bt = (torch.randn(m, m, device=dev) / 8).half()  # B column-major = B^T row-major
    c = torch.empty(m, m, device=dev)
    out.append(
        _nvcc(
            "wmma_gemm",
            grid=(m // 16, m // 16, 1),
            block=(32, 1, 1),
            args=[ptr(a), ptr(bt), ptr(c), np.int32(m), np.int32(m), np.int32(m)],
            outputs=[c],
            reference=lambda: [a.float() @ bt.float().T],
            exact=False,
        )
    )

    mm = 4096
    ha = (torch.randn(mm, mm, device=dev) / 8).half()
    hb = (torch.randn(mm, mm, device=dev) / 8).half()
    for name in ("matmul_wgmma", "matmul_tma"):
        hc = torch.empty(mm, mm, device=dev, dtype=torch.half)
        out.append(
            _triton(
                name,
                (mm // 128, mm // 128, 1),
                [ptr(ha), ptr(hb), ptr(hc), np.int32(mm), np.int32(mm), np.int32(mm)],
                outputs=[hc],
                reference=lambda: [ha @ hb],
                exact=False,
                pointers=spans(a=ha, b=hb, c=hc),
            )
        )

    bh, seq, d = 16, 2048, 64
    q, k, v = (torch.randn(bh, seq, d, device=dev).half() for _ in range(3))
    o = torch.empty_like(q)
    out.append(
        _triton(
            "flash_attention_fwd",
            (seq // 128, bh, 1),
            [ptr(q), ptr(k), ptr(v), ptr(o), np.float32(d**-0.5), np.int32(seq)],
            outputs=[o],
            reference=lambda: [torch.nn.functional.scaled_dot_product_attention(q, k, v)],
            exact=False,
            pointers=spans(q=q, k=k, v=v, o=o),
        )
    )

    rows, cols = 8192, 1024
    xr = torch.randn(rows, cols, device=dev)
    w, b = torch.randn(cols, device=dev), torch.randn(cols, device=dev)
    yl = torch.empty_like(xr)
    out.append(
        _triton(
            "layernorm",
            (rows, 1, 1),
            [ptr(xr), ptr(w), ptr(b), ptr(yl), np.int32(cols), np.float32(1e-5)],
            outputs=[yl],
            reference=lambda: [torch.nn.functional.layer_norm(xr, (cols,), w, b, 1e-5)],
            exact=True,
        )
    )
    ys = torch.empty_like(xr)
    out.append(
        _triton(
            "softmax",
            (rows, 1, 1),
            [ptr(xr), ptr(ys), np.int32(cols)],
            outputs=[ys],
            reference=lambda: [torch.softmax(xr, 1)],
            exact=True,
        )
    )

    ni = 1 << 24
    xs = torch.randint(0, 100, (ni,), device=dev, dtype=torch.int32)
    ys_ = torch.randint(-100, 100, (ni,), device=dev, dtype=torch.int32)
    acc = torch.zeros(1, device=dev, dtype=torch.int32)
    out.append(
        _triton(
            "reduce_sum",
            (ni // 1024, 1, 1),
            [ptr(xs), ptr(acc), np.int32(ni)],
            outputs=[acc],
            reference=lambda: [xs.sum().int().reshape(1)],
            exact=True,
            prepare=acc.zero_,
        )
    )
    oi = torch.empty_like(xs)
    out.append(
        _triton(
            "add_int",
            (ni // 1024, 1, 1),
            [ptr(xs), ptr(ys_), ptr(oi), np.int32(ni)],
            outputs=[oi],
            reference=lambda: [xs * 3 + ys_],
            exact=True,
        )
    )
    return out


def same(got: list[torch.Tensor], want: list[torch.Tensor], exact: bool) -> bool:
    """Bitwise equal when ``exact``, else within fp16 rounding (rtol = atol = 2e-2)."""
    for g, r in zip(got, want, strict=True):
        if exact:
            if not torch.equal(g, r):
                return False
        elif not torch.allclose(g.double(), r.double(), rtol=2e-2, atol=2e-2):
            return False
    return True


MEM_BUDGET_BYTES = 8 << 30  # a mem_trace buffer larger than this drops (and says so)


def probe_capacity(w: Workload, inst: Instrumented, module: object) -> int:
    """Records to allocate so that nothing drops: one per warp for per-warp probes (four
    times that for rings, whose per-SM stripes fill unevenly: saxpy's 524,288 warps on an
    H100 gave one SM 2,016 and another 8,328, against a mean of 3,972); for mem_trace,
    measured by a
    counting pass (a tiny ring whose per-SM claim counters still count every access),
    bounded by :data:`MEM_BUDGET_BYTES`."""
    ring = inst.map == "ring"
    if inst.probe != "mem_trace":
        return 4 * w.warps if ring else w.warps
    header = read_header(inst.text)
    assert header is not None
    counter = ProbeBuffers(module, get(inst.probe), header, 1)
    counter.reset()
    w.run(module)
    busiest = int(counter.claimed().max())
    stripes = counter.stripes
    counter.close()
    per = busiest + busiest // 10 + 16
    return min(per * stripes, MEM_BUDGET_BYTES // inst.record_size)


def load_probed(
    w: Workload, probe: str, sample: int = 1, level: str | None = None, map_kind: str | None = None
) -> tuple[Instrumented, object, ProbeBuffers]:
    """Instrument ``w``'s kernel, JIT-load it and bind a buffer sized by
    :func:`probe_capacity`."""
    inst = w.instrument(probe, sample, level, map_kind)
    module = load_ptx(inst.text)
    header = read_header(inst.text)
    assert header is not None
    return (
        inst,
        module,
        ProbeBuffers(module, get(inst.probe), header, probe_capacity(w, inst, module)),
    )
