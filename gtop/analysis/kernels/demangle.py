"""Readable kernel names: C++ demangling (libstdc++'s ``__cxa_demangle``) and shortening.

Pure functions over strings; results are cached, since a run has few distinct kernels.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
from functools import cache

from gtop.cupti.decode import GRAPH_NAME

_MAX_SHORT = 60


@cache
def _demangler() -> tuple[ctypes._CFuncPtr, ctypes._CFuncPtr] | None:
    for name in ("libstdc++.so.6", ctypes.util.find_library("stdc++")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        fn = lib.__cxa_demangle
        fn.argtypes = [
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_int),
        ]
        fn.restype = ctypes.c_void_p
        free = ctypes.CDLL(None).free
        free.argtypes = [ctypes.c_void_p]
        return fn, free
    return None


@cache
def demangle(name: str) -> str:
    """The C++ name of a mangled symbol; other names (Triton's, C's) come back as they are."""
    if not name.startswith("_Z"):
        return name
    tools = _demangler()
    if tools is None:
        return name
    fn, free = tools
    status = ctypes.c_int()
    out = fn(name.encode(), None, None, ctypes.byref(status))
    if not out or status.value != 0:
        return name
    try:
        return ctypes.string_at(out).decode(errors="replace")
    finally:
        free(out)


def _strip_brackets(text: str, open_: str, close: str, keep: str) -> str:
    """Replace the contents of each outermost ``open_…close`` pair by ``keep``."""
    out, depth = [], 0
    for ch in text:
        if ch == open_:
            if depth == 0:
                out.append(open_ + keep)
            depth += 1
        elif ch == close and depth:
            depth -= 1
            if depth == 0:
                out.append(close)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


@cache
def shorten(name: str, width: int = _MAX_SHORT) -> str:
    """A short form of a (demangled) kernel name for tables.

    Drops the return type, the parameter list and template arguments, keeps the last
    two scope components, e.g. ``void at::native::(anonymous namespace)::vectorized_
    elementwise_kernel<4, …>(int, …)`` becomes ``native::vectorized_elementwise_kernel<…>``.
    """
    if name.startswith(GRAPH_NAME):  # a whole graph launch: its name is no C++ name
        return name if len(name) <= width else name[: width - 1] + "…"
    text = demangle(name)
    text = text.replace("(anonymous namespace)", "anon")
    text = _strip_brackets(text, "<", ">", "…" if "<" in text else "")
    text = text.replace("<…>", "\0")  # protect template marks from the parameter strip
    text = re.sub(r"\(.*\)\s*(const)?$", "", text)
    text = text.split(" ")[-1] if " " in text else text
    parts = [p for p in text.split("::") if p and p != "anon"]
    short = "::".join(parts[-2:]).replace("\0", "<…>")
    if len(short) > width:
        short = short[: width - 1] + "…"
    return short or name[:width]
