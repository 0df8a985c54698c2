"""Formatting of recorded values for display.

Missing values arrive as NaN (floats) or -1 (signed ints) and print as ``N/A``; zero is
a real value and prints as zero. Only views call these functions.
"""

from __future__ import annotations

import math

from gtop.analysis.report.report_text import short_command

NA = "N/A"

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_RATE_UNITS = ("B/s", "kB/s", "MB/s", "GB/s", "TB/s")

THROTTLE_REASONS = (
    (0x1, "idle"),
    (0x2, "app clocks"),
    (0x4, "power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal"),
    (0x40, "HW thermal"),
    (0x80, "power brake"),
    (0x100, "display clocks"),
)
"""NVML clocks-event reason bits (``nvmlClocksEventReason*``) and their words."""


def missing(value: float | int | None) -> bool:
    """True for None, NaN and the integer "no value" marker (-1 or any negative)."""
    if value is None:
        return True
    if isinstance(value, float) or (hasattr(value, "dtype") and value.dtype.kind == "f"):
        return math.isnan(float(value))
    return int(value) < 0


def pct(value: float | None, width: int = 0) -> str:
    """``87%``; ``N/A`` when missing."""
    text = NA if missing(value) else f"{float(value):.0f}%"
    return text.rjust(width)


def num(value: float | int | None, unit: str = "", digits: int = 0) -> str:
    """A plain number with an optional unit, e.g. ``1980 MHz``; ``N/A`` when missing."""
    if missing(value):
        return NA
    text = f"{float(value):.{digits}f}"
    if not unit:
        return text
    return f"{text}{unit}" if unit.startswith("°") else f"{text} {unit}"


def _scaled(value: float, base: float, units: tuple[str, ...]) -> str:
    i = 0
    while abs(value) >= base and i < len(units) - 1:
        value /= base
        i += 1
    if i == 0:
        return f"{value:.0f} {units[0]}"
    return f"{value:.1f} {units[i]}" if abs(value) < 100 else f"{value:.0f} {units[i]}"


def size(value: float | int | None) -> str:
    """Bytes in binary units: ``42.1 GiB``; ``N/A`` when missing."""
    return NA if missing(value) else _scaled(float(value), 1024.0, _BYTE_UNITS)


def rate(value: float | None) -> str:
    """Bytes per second in decimal units: ``3.4 GB/s``; ``N/A`` when missing."""
    return NA if missing(value) else _scaled(float(value), 1000.0, _RATE_UNITS)


def throttle(mask: int | None) -> str:
    """The clocks-event reasons of an NVML bitmask in words: ``power cap, HW thermal``.

    ``none`` for 0; ``N/A`` when missing; unknown bits print as hex.
    """
    if missing(mask):
        return NA
    mask = int(mask)
    if mask == 0:
        return "none"
    words = [word for bit, word in THROTTLE_REASONS if mask & bit]
    rest = mask & ~sum(bit for bit, _ in THROTTLE_REASONS)
    if rest:
        words.append(hex(rest))
    return ", ".join(words)


def clock(seconds: float) -> str:
    """``m:ss.s`` (or ``h:mm:ss``) for a replay position."""
    seconds = max(0.0, seconds)
    if seconds >= 3600:
        h, rest = divmod(int(seconds), 3600)
        return f"{h}:{rest // 60:02d}:{rest % 60:02d}"
    m, s = divmod(seconds, 60)
    return f"{int(m)}:{s:04.1f}"


def command(cmdline: list[str] | None, name: str | None, short: bool = False) -> str:
    """A process's command line for display, or its name, or ``N/A``.

    ``short`` drops the directories of the program and of path arguments (``python3
    train.py --bs 8`` rather than ``/opt/venv/bin/python3 /work/x/train.py --bs 8``), as
    ``gtop report`` writes its target, so 80 columns show the script and its arguments.
    """
    if cmdline:
        return short_command(cmdline) if short else " ".join(cmdline)
    return f"[{name}]" if name else NA
