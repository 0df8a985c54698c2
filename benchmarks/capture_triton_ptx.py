"""Regenerate the Triton part of the PTX corpus (tests/corpus/ptx/triton_*.ptx).

Usage: python benchmarks/capture_triton_ptx.py [OUT_DIR]   (default: tests/corpus/ptx)

Compiles every kernel of ``benchmarks/triton_kernels.py`` for sm_90 with Triton and writes
its PTX; on a GPU machine, also records the device name in ``triton_capture.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_kernels import CORPUS, compile_ptx


def _device() -> str:
    try:
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
    except ImportError:
        return "none"


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parent.parent
    out = Path(argv[1]) if len(argv) > 1 else root / "tests" / "corpus" / "ptx"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in CORPUS:
        ptx = compile_ptx(entry)
        path = out / f"triton_{entry.name}.ptx"
        path.write_text(ptx)
        written.append(path.name)
        print(f"{path}  {len(ptx.splitlines())} lines")
    meta = {"triton": triton.__version__, "device": _device(), "files": written}
    (out / "triton_capture.json").write_text(json.dumps(meta, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
