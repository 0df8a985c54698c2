"""Which CUPTI activity kinds each agent mode traces (no side effects: gtop imports it).

The default is the cheap set that meets the overhead target: runtime/driver API records
about double CUPTI's cost on launch-bound code (measured on an H200, 0.56 vs 0.83 of
untraced steps/s with and without them), so they are only in ``full`` (or named
explicitly, e.g. ``kernel,memcpy,runtime``).
"""

from __future__ import annotations

KINDS = ("kernel", "memcpy", "memset", "sync", "runtime", "driver", "marker", "overhead")

MODES: dict[str, tuple[str, ...]] = {
    "default": ("kernel", "memcpy", "memset", "sync"),
    "full": KINDS,
}


def kinds_for(mode: str) -> tuple[str, ...]:
    """The kinds of a mode name or of a comma-separated list of kinds.

    Raises:
        ValueError: an unknown mode or kind (the message lists the valid ones).
    """
    if mode in MODES:
        return MODES[mode]
    kinds = tuple(k.strip() for k in mode.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(
            f"unknown agent mode or kinds {mode!r}: use {' or '.join(MODES)}, "
            f"or a comma-separated list of {', '.join(KINDS)}"
        )
    return kinds
