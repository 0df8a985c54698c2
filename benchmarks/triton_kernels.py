"""Triton 3.6 kernels used as the PTX corpus, the GPU tests and the probe benchmarks.

Each entry of :data:`CORPUS` names a kernel together with the signature, constexprs and
options it is compiled with, so the same PTX can be produced with or without a GPU
(``triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A @ B for row-major fp16 A (M x K), B (K x N); fp32 accumulation. Written like
    Triton's tutorial, so sm_90 gets pipelined cp.async loads and wgmma."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = tl.max_contiguous(tl.multiple_of((pid_m * BM + tl.arange(0, BM)) % M, BM), BM)
    rn = tl.max_contiguous(tl.multiple_of((pid_n * BN + tl.arange(0, BN)) % N, BN), BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        x = tl.load(pa, mask=rk[None, :] < K - k0 * BK, other=0.0)
        y = tl.load(pb, mask=rk[:, None] < K - k0 * BK, other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BK
        pb += BK * N
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    mask = (cm[:, None] < M) & (cn[None, :] < N)
    tl.store(c + cm[:, None] * N + cn[None, :], acc.to(tl.float16), mask=mask)


@triton.jit
def matmul_tma_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The same matmul through tensor descriptors: TMA (cp.async.bulk.tensor) and mbarriers."""
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    dc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    om = tl.program_id(0) * BM
    on = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        acc = tl.dot(da.load([om, k0]), db.load([k0, on]), acc)
    dc.store([om, on], acc.to(tl.float16))


@triton.jit
def matmul_persistent_kernel(
    a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_SMS: tl.constexpr
):
    """Persistent C = A @ B^T (B given as N x K) over TMA descriptors: one program per SM
    walks the output tiles."""
    da = tl.make_tensor_descriptor(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(b, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    dc = tl.make_tensor_descriptor(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, NUM_SMS, flatten=True):
        om = (tile // tiles_n) * BM
        on = (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            acc = tl.dot(da.load([om, k0]), db.load([on, k0]).T, acc)
        dc.store([om, on], acc.to(tl.float16))


@triton.jit
def attention_fwd_kernel(
    q, k, v, o, sm_scale, L, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr
):
    """Flash-attention forward for one (batch·head) per grid row; q/k/v/o are (BH, L, D)."""
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    base = bh * L * D
    rm = start_m * BM + tl.arange(0, BM)
    rd = tl.arange(0, D)
    qb = tl.load(q + base + rm[:, None] * D + rd[None, :], mask=rm[:, None] < L)
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for n0 in range(0, L, BN):
        rn = n0 + tl.arange(0, BN)
        kb = tl.load(k + base + rn[None, :] * D + rd[:, None], mask=rn[None, :] < L)
        s = tl.dot(qb, kb) * sm_scale
        s = tl.where(rn[None, :] < L, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        vb = tl.load(v + base + rn[:, None] * D + rd[None, :], mask=rn[:, None] < L)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), vb)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o + base + rm[:, None] * D + rd[None, :], acc.to(tl.float16), mask=rm[:, None] < L)


@triton.jit
def layernorm_kernel(x, w, b, y, N, eps, BLOCK: tl.constexpr):
    """One row per program: y = (x - mean) / sqrt(var + eps) * w + b."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    xv = tl.load(x + row * N + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(xv, 0) / N
    d = tl.where(m, xv - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, 0) / N + eps)
    out = d * rstd * tl.load(w + cols, mask=m) + tl.load(b + cols, mask=m)
    tl.store(y + row * N + cols, out, mask=m)


@triton.jit
def softmax_kernel(x, y, N, BLOCK: tl.constexpr):
    """Row softmax, one row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    xv = tl.load(x + row * N + cols, mask=cols < N, other=float("-inf"))
    e = tl.exp(xv - tl.max(xv, 0))
    tl.store(y + row * N + cols, e / tl.sum(e, 0), mask=cols < N)


@triton.jit
def reduce_sum_kernel(x, out, n, BLOCK: tl.constexpr):
    """Integer sum: each program adds its block's partial sum into ``out`` atomically."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out, tl.sum(tl.load(x + i, mask=i < n, other=0), 0))


@triton.jit
def add_int_kernel(x, y, o, n, BLOCK: tl.constexpr):
    """Elementwise integer add (bitwise-comparable results)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(o + i, tl.load(x + i, mask=m) * 3 + tl.load(y + i, mask=m), mask=m)


@dataclass(frozen=True)
class CorpusKernel:
    """One Triton kernel with everything ``triton.compile`` needs besides the target."""

    name: str
    fn: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    aligned: tuple[int, ...] = ()  # argument indices known 16-divisible (as Triton's JIT infers)


def _matmul(name: str, fn: Any, **constexprs: int) -> CorpusKernel:
    """An fp16 matmul entry: (a, b, c, M, N, K) all 16-divisible, 128x128x64 tiles (plus
    ``constexprs``), 4 warps, 3 stages."""
    return CorpusKernel(
        name,
        fn,
        {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32", "K": "i32"},
        {"BM": 128, "BN": 128, "BK": 64, **constexprs},
        {"num_warps": 4, "num_stages": 3},
        aligned=(0, 1, 2, 3, 4, 5),
    )


CORPUS: list[CorpusKernel] = [
    _matmul("matmul_wgmma", matmul_kernel),
    _matmul("matmul_tma", matmul_tma_kernel),
    _matmul("matmul_persistent_tma", matmul_persistent_kernel, NUM_SMS=132),
    CorpusKernel(
        "flash_attention_fwd",
        attention_fwd_kernel,
        {"q": "*fp16", "k": "*fp16", "v": "*fp16", "o": "*fp16", "sm_scale": "fp32", "L": "i32"},
        {"D": 64, "BM": 128, "BN": 64},
        {"num_warps": 8, "num_stages": 2},
        aligned=(0, 1, 2, 3, 5),
    ),
    CorpusKernel(
        "layernorm",
        layernorm_kernel,
        {"x": "*fp32", "w": "*fp32", "b": "*fp32", "y": "*fp32", "N": "i32", "eps": "fp32"},
        {"BLOCK": 1024},
        {"num_warps": 4},
        aligned=(0, 1, 2, 3, 4),
    ),
    CorpusKernel(
        "softmax",
        softmax_kernel,
        {"x": "*fp32", "y": "*fp32", "N": "i32"},
        {"BLOCK": 1024},
        {"num_warps": 4},
        aligned=(0, 1, 2),
    ),
    CorpusKernel(
        "reduce_sum",
        reduce_sum_kernel,
        {"x": "*i32", "out": "*i32", "n": "i32"},
        {"BLOCK": 1024},
        {"num_warps": 4},
        aligned=(0, 1, 2),
    ),
    CorpusKernel(
        "add_int",
        add_int_kernel,
        {"x": "*i32", "y": "*i32", "o": "*i32", "n": "i32"},
        {"BLOCK": 1024},
        {"num_warps": 4},
        aligned=(0, 1, 2, 3),
    ),
]


def compile_kernel(entry: CorpusKernel, capability: int = 90) -> Any:
    """Compile one corpus kernel for ``sm_<capability>`` (no GPU needed); a CompiledKernel
    with ``asm["ptx"]`` and ``metadata`` (shared, num_warps, global_scratch_size, ...)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    attrs = {(i,): [["tt.divisibility", 16]] for i in entry.aligned}
    src = ASTSource(entry.fn, entry.signature, entry.constexprs, attrs)
    return triton.compile(src, target=GPUTarget("cuda", capability, 32), options=entry.options)


def compile_ptx(entry: CorpusKernel, capability: int = 90) -> str:
    """The PTX of one corpus kernel."""
    return compile_kernel(entry, capability).asm["ptx"]
