"""Kernel labels for tables: the short name, told apart from its namesakes.

PyTorch runs many kernels that shorten to the same ``native::vectorized_elementwise_
kernel<…>``; what tells them apart is the functor in their template arguments
(``FillFunctor<float>``, ``CUDAFunctor_add<BFloat16>``), and failing that their grid.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from gtop.analysis.cuda_activity import KernelRow
from gtop.views.fmt import units

GENERIC = frozenset(
    [
        "at",
        "native",
        "std",
        "c10",
        "cuda",
        "cub",
        "detail",
        "void",
        "int",
        "char",
        "float",
        "double",
        "bool",
        "long",
        "unsigned",
        "const",
        "array",
        "gpu_kernel_impl",
        "gpu_kernel_impl_nocast",
        "func_wrapper_t",
        "ReduceOp",
        "TensorListMetadata",
        "FusedOptimizerTensorListMetadata",
        "operator",
        "lambda",
        "anonymous",
        "namespace",
        "TrivialOffsetCalculator",
        "OffsetCalculator",
        "TensorIteratorBase",
        "TensorIterator",
        "BFloat16",
        "Half",
        "LoadWithoutCast",
        "StoreWithoutCast",
        "memory",
        "ul",
        "unsigned_int",
        "type",
    ]
)
_TOKEN = re.compile(r"([A-Za-z_]\w*)(<[^<>()]{1,24}>)?")


def _tag(demangled: str) -> str:
    """The first telling name in the template arguments, with short arguments of its own
    (``FillFunctor<float>``); "" when there is none."""
    args = demangled[demangled.find("<") + 1 :] if "<" in demangled else ""
    for m in _TOKEN.finditer(args):
        name, targs = m.group(1), m.group(2) or ""
        if name in GENERIC or args[m.end() : m.end() + 2] == "::":
            continue
        return name + targs.replace("c10::", "").replace(" ", "")
    return ""


def labels(rows: Sequence[KernelRow]) -> dict[str, str]:
    """A label per kernel name (``row.name``), unique among ``rows`` where the names
    allow: the short form, else with the telling template argument, else with the grid."""
    count = Counter(r.short for r in rows)
    out = {}
    for r in rows:
        if count[r.short] == 1:
            out[r.name] = r.short
        else:
            tag = _tag(r.demangled)
            out[r.name] = r.short.replace("<…>", f"<{tag}>") if tag else r.short
    again = Counter(out.values())
    for r in rows:
        if again[out[r.name]] > 1:
            out[r.name] = f"{out[r.name]} {units.dims(r.grid)}"
    return out
