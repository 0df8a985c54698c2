"""The in-process Triton probe manager on a real GPU (run: pytest -m gpu tests/probes).

Needs torch, triton 3.6 and cuda-bindings (the GPU machine's stack). Every assertion
message carries :meth:`TritonProbes.diagnose` (hook state, per-kernel stage counts, all
errors), and the fixture prints it at teardown, so a failure names the stage that did not
happen.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

BENCH = Path(__file__).resolve().parent.parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def tk() -> ModuleType:
    """benchmarks/triton_kernels.py."""
    sys.path.insert(0, str(BENCH))
    import triton_kernels

    return triton_kernels


@pytest.fixture
def probes(tmp_path: Path):
    import triton

    from gtop.agent.triton_probes import TritonProbes

    user = triton.knobs.cache.dir
    triton.knobs.cache.dir = str(tmp_path / "user-cache")
    manager = TritonProbes()
    yield manager
    manager.close()
    manager.poll()  # frees retired buffers whose fence passed
    print(f"--- TritonProbes.diagnose() at teardown ---\n{manager.diagnose()}")
    triton.knobs.cache.dir = user


def _wait(probes, n: int, timeout: float = 10.0) -> list:
    import torch

    torch.cuda.synchronize()
    got: list = []
    deadline = time.monotonic() + timeout
    got += probes.poll()
    while len(got) < n and time.monotonic() < deadline:
        time.sleep(0.01)
        got += probes.poll()
    return got


def test_compile_path_keeps_user_cache_clean(tk: ModuleType, probes, tmp_path: Path) -> None:
    from gtop.agent.triton_probes import Selection
    from gtop.probes.engine.rewrite import read_header

    entry = next(e for e in tk.CORPUS if e.name == "matmul_wgmma")
    probes.enable(Selection("^matmul_kernel$", "tensorop"))
    probed = tk.compile_kernel(entry)
    assert read_header(probed.asm["ptx"])["kernels"][0]["classes"]
    probes.disable()
    assert read_header(tk.compile_kernel(entry).asm["ptx"]) is None
    user_ptx = list((tmp_path / "user-cache").rglob("*.ptx"))
    assert user_ptx and not any("gtop-probe" in p.read_text() for p in user_ptx)
    assert not probes.errors, probes.diagnose()


def test_toggle_jit_kernel(tk: ModuleType, probes) -> None:
    import torch

    from gtop.agent.triton_probes import Selection

    n = 1 << 22
    x = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32)
    y = torch.randint(-1000, 1000, (n,), device="cuda", dtype=torch.int32)
    out = torch.empty_like(x)
    grid = (n // 1024,)

    def run() -> torch.Tensor:
        out.zero_()
        tk.add_int_kernel[grid](x, y, out, n, BLOCK=1024, num_warps=4)
        return out.clone()

    want = run()
    probes.enable(Selection("^add_int_kernel$", "block_sched", every=3))
    got = []
    for _ in range(7):
        assert torch.equal(run(), want)
        torch.cuda.synchronize()  # lets every copy finish before the next due launch
        got += probes.poll()
    got += _wait(probes, 3 - len(got))
    assert [c.launch for c in got] == [1, 4, 7], probes.diagnose()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for c in got:
        records, overflow = c.decoded()
        seen = len(set(records["smid"].tolist()))
        why = f"launch {c.launch}: {len(records)} records, {overflow} dropped, {seen} SMs"
        assert overflow == 0 and len(records) == grid[0] * 4, why
        assert seen == sms, why
    probes.disable()
    assert torch.equal(run(), want)
    assert _wait(probes, 1, timeout=0.5) == []
    assert not probes.errors, probes.diagnose()


def test_tensorop_on_live_matmul(tk: ModuleType, probes) -> None:
    import torch

    from gtop.agent.triton_probes import Selection

    m = 4096
    a = (torch.randn(m, m, device="cuda") / 8).half()
    b = (torch.randn(m, m, device="cuda") / 8).half()
    c = torch.empty(m, m, device="cuda", dtype=torch.half)

    def run() -> torch.Tensor:
        tk.matmul_kernel[(m // 128, m // 128)](
            a, b, c, m, m, m, BM=128, BN=128, BK=64, num_warps=4, num_stages=3
        )
        return c.clone()

    want = run()
    probes.enable(Selection("^matmul_kernel$", "tensorop"))
    got = run()
    results = _wait(probes, 1)
    assert len(results) == 1, probes.diagnose()
    (collected,) = results
    assert torch.equal(got, want)
    rec, overflow = collected.decoded()
    why = f"{len(rec)} records, {overflow} dropped, header {collected.header}"
    assert len(rec) == (m // 128) ** 2 * 4 and overflow == 0, why
    counts = np.unique(rec["count"][:, 0], return_counts=True)
    assert (rec["count"][:, 0] == m // 64 * 8).all(), f"count[0] values: {counts}"
    assert collected.header["kernels"][0]["classes"] == ["wgmma.m64n128k16.f32.f16.f16"], why
    probes.disable()
    assert torch.equal(run(), want)
    assert not probes.errors, probes.diagnose()


def test_toggle_in_torch_compiled_model(probes) -> None:
    """On, then off, for the Triton kernels of a torch.compile'd model: outputs unchanged,
    records collected while on (Inductor kernels recompile on toggle)."""
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    from gtop.agent.triton_probes import Selection

    torch.manual_seed(0)
    w = torch.randn(512, 512, device="cuda")
    x = torch.randn(1024, 512, device="cuda")

    def model(v: torch.Tensor) -> torch.Tensor:
        h = torch.relu(v * 1.5 + 0.25)
        return torch.softmax(h, dim=-1) @ w + h.sum(dim=0)

    patch = inductor_config.patch(
        compile_threads=1, use_static_cuda_launcher=False, force_disable_caches=True
    )
    with patch:
        compiled = torch.compile(model)
        want = compiled(x)
        probes.enable(Selection("^triton_", "block_sched"))
        torch._dynamo.reset()
        compiled = torch.compile(model)
        on = compiled(x)
        collected = _wait(probes, 1)
        probes.disable()
        torch._dynamo.reset()
        compiled = torch.compile(model)
        off = compiled(x)
    report = probes.diagnose()
    assert torch.equal(on, want), f"probed output differs: {(on - want).abs().max()}\n{report}"
    assert torch.equal(off, want), f"output after off differs: {(off - want).abs().max()}"
    assert collected, f"no records from Inductor kernels\n{report}"
    decoded = [c.decoded() for c in collected]
    summary = [
        (c.kernel, c.launch, len(r), o) for c, (r, o) in zip(collected, decoded, strict=True)
    ]
    assert all(
        c.kernel.startswith("triton_") and len(r) > 0
        for c, (r, _) in zip(collected, decoded, strict=True)
    ), f"{summary}\n{report}"
