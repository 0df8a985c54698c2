"""Helpers for the PTX engine tests: the corpus and ptxas (missing ptxas is a failure)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ptx"
CORPUS_FILES = sorted(CORPUS.glob("*.ptx"))


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
