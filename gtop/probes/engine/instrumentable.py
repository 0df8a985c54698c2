"""Which kernels the PTX probes can reach: only those whose module ships PTX.

Triton kernels are compiled from PTX in the process, so their names (plain identifiers
such as ``matmul_kernel`` or Inductor's ``triton_poi_fused_add_0``) are probe targets.
PyTorch's built-in kernels and cuBLAS/cuDNN/CUTLASS kernels come as SASS only in the
official wheels: C++ names (mangled ``_Z…`` or demangled with ``::``, templates or
argument lists) and the vendor libraries' naming schemes are refused up front.
"""

from __future__ import annotations

import re

NO_PTX = "not instrumentable: no PTX in the binary (PyTorch/cuBLAS kernels ship SASS only)"

_VENDOR = re.compile(
    r"^(sm\d+_|ampere_|volta_|turing_|hopper_|maxwell_|cutlass|cublas|cudnn|nvjet|xmma|"
    r"gemv|gemmk|gemmSN|splitKreduce|cub[A-Z_]|ncclDevKernel|ncclKernel)",
    re.IGNORECASE,
)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def refusal(name: str) -> str | None:
    """Why kernel ``name`` cannot be probed, or None when it may be a Triton kernel."""
    if name.startswith("_Z") or not _IDENT.match(name) or _VENDOR.match(name):
        return NO_PTX
    return None
