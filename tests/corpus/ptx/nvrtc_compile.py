"""Compile nvrtc_kernels.cu with NVRTC (cuda-bindings + nvidia-cuda-nvrtc) to
nvrtc_kernels.ptx, instantiating the template kernel through name expressions.

Usage: python tests/corpus/ptx/nvrtc_compile.py
"""

from __future__ import annotations

from pathlib import Path

from cuda.bindings import nvrtc

HERE = Path(__file__).resolve().parent
NAMES = [b"scaled_softplus<float>", b"scaled_softplus<double>"]


def _check(result: tuple) -> object:
    err, *values = result
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC: {err}")
    return values[0] if values else None


def main() -> None:
    source = (HERE / "nvrtc_kernels.cu").read_bytes()
    prog = _check(nvrtc.nvrtcCreateProgram(source, b"nvrtc_kernels.cu", 0, [], []))
    for name in NAMES:
        _check(nvrtc.nvrtcAddNameExpression(prog, name))
    opts = [b"--gpu-architecture=compute_90a", b"--generate-line-info", b"-std=c++17"]
    try:
        _check(nvrtc.nvrtcCompileProgram(prog, len(opts), opts))
    except RuntimeError:
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log))
        raise RuntimeError(log.decode()) from None
    size = _check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    _check(nvrtc.nvrtcGetPTX(prog, ptx))
    (HERE / "nvrtc_kernels.ptx").write_text(ptx.rstrip(b"\0").decode())
    print("wrote", HERE / "nvrtc_kernels.ptx")


if __name__ == "__main__":
    main()
