"""Kernel labels for tables: the short name, told apart from its namesakes.

PyTorch runs many kernels that shorten to the same ``native::vectorized_elementwise_
kernel<…>``; what tells them apart is the functor in their template arguments
(``FillFunctor<float>``, ``CUDAFunctor_add<BFloat16>``), and failing that whatever else
differs in their full names (cuBLAS's ``gemvx::kernel<…>`` differ in one number). Never
their launches: a kernel launched with several grids would change label as it runs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from functools import lru_cache
from types import MappingProxyType

from gtop.analysis.kernels.demangle import demangle, shorten

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
_MAX_LABEL = 60
"""A label's longest form (that of :func:`~gtop.analysis.kernels.demangle.shorten`)."""
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


MAX_DIFF = 24
"""Characters of the differing words a label shows (a longer word is cut, with "…")."""
DIFF_WORDS = 2
SCOPES = frozenset(
    ["at", "native", "std", "c10", "cuda", "cub", "detail", "anonymous", "namespace"]
)
"""Namespace words, which tell namesakes apart only where nothing else does."""
_WORD = re.compile(r"\w+")


def labels(names: Iterable[str]) -> Mapping[str, str]:
    """A label per kernel name (as CUPTI reports it), unique among ``names`` where they
    allow: the short form; for namesakes, with the telling template argument; for those
    still alike, with the words of their full names that differ (cuBLAS's
    ``gemvx::kernel<false…7…>`` beside ``gemvx::kernel<false…6…>``); for any still
    alike, a number.

    A label depends on the set of names alone, never on launches, so a row keeps its
    label while a replay plays or seeks; it changes only when a namesake first runs.
    Pass every kernel name known so far, not only those in the current rows (a seek
    changes the rows, not the names seen by then)."""
    return _labels(frozenset(names))


@lru_cache(maxsize=8)
def _labels(names: frozenset[str]) -> Mapping[str, str]:
    short = {n: shorten(n) for n in names}
    count = Counter(short.values())
    out = {}
    for n in names:
        tag = _tag(demangle(n)) if count[short[n]] > 1 else ""
        out[n] = short[n].replace("<…>", f"<{tag}>") if tag else short[n]
    for group in _alike(out):
        for n, part in _differing(group).items():
            out[n] = _with_part(out[n], part)
    for group in _alike(out):
        for k, n in enumerate(sorted(group), 1):
            out[n] = f"{out[n]} #{k}"
    return MappingProxyType(out)


def _alike(out: Mapping[str, str]) -> list[list[str]]:
    """The names that share a label, by label."""
    by_label: dict[str, list[str]] = {}
    for n, label in out.items():
        by_label.setdefault(label, []).append(n)
    return [group for group in by_label.values() if len(group) > 1]


def _differing(group: Sequence[str]) -> dict[str, str]:
    """Per name, the words of its demangled name that differ from another of ``group``
    (names first; numbers and :data:`SCOPES` only where no other name differs), at most
    :data:`DIFF_WORDS` of them."""
    words = {n: _WORD.findall(demangle(n)) for n in group}
    out = {}
    for n in group:
        differ: dict[str, None] = {}
        for other in group:
            if other == n:
                continue
            match = SequenceMatcher(None, words[n], words[other], autojunk=False)
            for op, a, b, _, _ in match.get_opcodes():
                if op != "equal":
                    differ.update(dict.fromkeys(words[n][a:b]))
        names = [w for w in differ if not w[0].isdigit() and w not in SCOPES]
        part = ""
        for word in (names or list(differ))[:DIFF_WORDS]:
            if part and len(part) + 1 + len(word) > MAX_DIFF:
                break
            part = f"{part} {word}" if part else word
        out[n] = part
    return out


def _with_part(label: str, part: str) -> str:
    """``label`` with the words that tell it apart: inside its template brackets when
    it has them (``gemvx::kernel<…7…>``), else after it."""
    part = part or "∅"
    if len(part) > MAX_DIFF:
        part = part[: MAX_DIFF - 1] + "…"
    if label.endswith(">"):
        inner = label[:-1] if label.endswith("<…>") else label[:-1] + "…"
        return f"{inner}{part}…>"
    room = _MAX_LABEL - len(part) - 3
    head = label if len(label) <= room else label[: room - 1] + "…"
    return f"{head} [{part}]"


MIN_HEAD = 8
"""Cells of a kernel's own name that :func:`fit` keeps before what tells it apart."""


def fit(label: str, width: int) -> str:
    """``label`` in ``width`` cells, cut where it says least: first a :data:`SCOPES`
    scope (``native::``), then the end of its name, keeping what tells it from its
    namesakes (template arguments, differing words: ``vectorized_elem…<CUDAFunctor_add<
    float>>``) and :data:`MIN_HEAD` cells of the name at least. A label with nothing to
    keep is cut at the end."""
    if len(label) <= width:
        return label
    at = min((i for i in (label.find("<"), label.find(" [")) if i > 0), default=len(label))
    tail = label[at:]
    if tail in ("", "<…>") or width < 2 * MIN_HEAD:
        return label[: width - 1] + "…"
    scopes = label[:at].split("::")
    while len(scopes) > 1 and scopes[0] in SCOPES:
        scopes.pop(0)
    name = "::".join(scopes)
    if len(name) + len(tail) <= width:
        return name + tail
    if MIN_HEAD + 1 + len(tail) <= width:
        return name[: width - len(tail) - 1] + "…" + tail
    return name[:MIN_HEAD] + "…" + tail[: width - MIN_HEAD - 2] + "…"
