"""Every probe, in every level/map/sampling variant, on every corpus file assembles."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gtop.probes.catalog import PROBES
from gtop.probes.engine import ptx
from gtop.probes.engine.probe import MapKind
from gtop.probes.engine.rewrite import RewriteError, instrument

from .helpers import CORPUS_FILES, run_ptxas

VARIANTS = [
    (name, level, map_kind, sample)
    for name, probe in PROBES.items()
    for level in probe.levels
    for map_kind in probe.maps
    for sample in ((1, 8, 64) if probe.sampled else (1,))
]


def test_corpus_is_complete() -> None:
    names = {p.name for p in CORPUS_FILES}
    for kernel in ("matmul_wgmma", "matmul_tma", "flash_attention_fwd", "layernorm"):
        assert f"triton_{kernel}.ptx" in names
    assert {"triton_softmax.ptx", "triton_reduce_sum.ptx", "nvcc_cuda_kernels.ptx"} <= names
    assert {"nvcc_cuda_misc.ptx", "nvcc_cuda_misc_debug.ptx", "nvrtc_kernels.ptx"} <= names
    assert "nvcc_cuda_funcs.ptx" in names  # .func bodies with global accesses and mma


@pytest.fixture(scope="module")
def assembled(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[Path], subprocess.CompletedProcess]:
    """``assembled(path)``: ptxas on a corpus file as committed, run once per file (each
    of the file's probe variants compares its warnings with these)."""
    done: dict[Path, subprocess.CompletedProcess] = {}

    def get(path: Path) -> subprocess.CompletedProcess:
        if path not in done:
            done[path] = run_ptxas(path.read_text(), tmp_path_factory.mktemp("original"))
        return done[path]

    return get


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_original_assembles(
    path: Path, assembled: Callable[[Path], subprocess.CompletedProcess]
) -> None:
    done = assembled(path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v[:2] + v[3:])))
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.stem)
def test_probe_assembles(
    path: Path,
    variant: tuple,
    tmp_path: Path,
    assembled: Callable[[Path], subprocess.CompletedProcess],
) -> None:
    name, level, map_kind, sample = variant
    source = path.read_text()
    module = ptx.parse(source)
    if name == "tensorop" and map_kind is MapKind.RING and path.stem == "nvcc_cuda_funcs":
        with pytest.raises(RewriteError, match="array map"):  # .func mma sites
            instrument(module, PROBES[name], level=level, map_kind=map_kind)
        return
    result = instrument(module, PROBES[name], level=level, map_kind=map_kind, sample=sample)
    done = run_ptxas(result.text, tmp_path)
    assert done.returncode == 0, done.stderr[:2000]
    # The probe adds no ptxas warnings (e.g. wgmma serialisation) to the kernel's own.
    assert done.stderr == assembled(path).stderr
    original = source.splitlines()
    kept = [line for line in result.text.splitlines() if "gtop" not in line]
    assert kept == original
    assert [k.name for k in result.kernels] == [f.name for f in module.kernels]
    for k in result.kernels:
        # mem_trace has no exit tracepoint; tensorop leaves kernels without mma untouched
        skipped = name == "tensorop" and not k.sites and not k.classes
        assert k.sites.get("exit", 0) >= 1 or name == "mem_trace" or skipped, k


def test_tensorop_finds_hopper_wgmma() -> None:
    module = ptx.parse((CORPUS_FILES[0].parent / "triton_matmul_wgmma.ptx").read_text())
    (kernel,) = instrument(module, PROBES["tensorop"]).kernels
    assert kernel.classes == ["wgmma.m64n128k16.f32.f16.f16"]
    # wgmma is counted before its issue, not timed around it: no "mma_end" sites
    assert kernel.sites["mma"] > 0 and "mma_end" not in kernel.sites
    assert kernel.sites["wait_end"] > 0 and "wait" not in kernel.sites


def test_tensorop_classes_in_nvcc_kernels() -> None:
    module = ptx.parse((CORPUS_FILES[0].parent / "nvcc_cuda_kernels.ptx").read_text())
    kernels = {k.name: k for k in instrument(module, PROBES["tensorop"]).kernels}
    assert kernels["mma_bf16_tile"].classes == ["mma.m16n8k16.f32.bf16.bf16.f32"]
    assert kernels["wmma_gemm"].classes[0].startswith("wmma.m16n16k16")
    assert kernels["saxpy"].classes == [] and kernels["saxpy"].sites == {}
