"""Helpers for the PTX engine tests: the corpus, ptxas (missing ptxas is a failure) and the
code the rewriter inserted."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ptx"
CORPUS_FILES = sorted(CORPUS.glob("*.ptx"))

PTX_PREAMBLE = ".version 8.7\n.target sm_90a\n.address_size 64\n"
"""The module header of the hand-written test kernels."""
ENTRY_K = """\
.visible .entry k(.param .u64 k_p0)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<16>;
\t.reg .f32 %f<16>;
\t.reg .b64 %rd<4>;
\tld.param.u64 %rd1, [k_p0];
"""
"""The opening of a one-pointer kernel ``k``: its registers, its pointer in ``%rd1``."""


def run_ptxas(ptx: str, tmp_path: Path, arch: str = "sm_90a") -> subprocess.CompletedProcess:
    """Assemble ``ptx`` with ptxas; fails the test (never skips) when ptxas is missing."""
    exe = shutil.which("ptxas")
    if exe is None:
        pytest.fail("ptxas not found in PATH: install the CUDA toolkit (or nvidia-cuda-nvcc)")
    src = tmp_path / "in.ptx"
    src.write_text(ptx)
    return subprocess.run(
        [exe, f"-arch={arch}", str(src), "-o", str(tmp_path / "out.cubin")],
        capture_output=True,
        text=True,
        timeout=120,
    )


def inserted_snippets(lines: Iterable[str]) -> list[str]:
    """The code the rewriter inserted among ``lines`` (a function's body): its prologue,
    then one snippet per site in order (each site's starts by setting its guard
    ``%gtop_g``); ``.reg`` declarations left out."""
    runs: list[list[str]] = [[]]
    for line in lines:
        inserted = "gtop" in line
        guard = line.strip().startswith(("mov.pred %gtop_g", "not.pred %gtop_g"))
        if (guard or not inserted) and runs[-1]:
            runs.append([])
        if inserted and not line.strip().startswith(".reg"):
            runs[-1].append(line)
    return ["\n".join(r) for r in runs if r]
