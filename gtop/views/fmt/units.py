"""How views print durations, rates and sizes (only views turn numbers into text)."""

from __future__ import annotations

import math


def duration(ns: float) -> str:
    """``1.23 ms``-style text; ``N/A`` for a missing value."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)) or ns < 0:
        return "N/A"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def rate(per_s: float) -> str:
    if per_s >= 1e6:
        return f"{per_s / 1e6:.3g}M/s"
    if per_s >= 1e3:
        return f"{per_s / 1e3:.3g}k/s"
    return f"{per_s:.3g}/s"


def size(nbytes: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.0f} B"


def dims(d: tuple[int, ...]) -> str:
    """Grid/block dimensions without the trailing 1s (``128x4``)."""
    shown = [v for v in d if v >= 0]
    while len(shown) > 1 and shown[-1] == 1:
        shown.pop()
    return "x".join(str(v) for v in shown) or "N/A"
