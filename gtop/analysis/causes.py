"""The causes that partition a unit's wall clock, and the four off panels (names shared by
the engine, the report, the flamegraph and the views)."""

from __future__ import annotations

from enum import IntEnum


class Cause(IntEnum):
    G_COMP = 0
    G_XFER = 1
    H_CTRL = 2
    H_APP = 3
    H_WAIT_GPU = 4
    H_IO = 5
    """Blocked in, or on-CPU inside, an I/O syscall (file or network)."""
    OFF_CPU = 6
    G_QUEUE = 7
    G_STALL = 8
    UNKNOWN = 9
    """Off-GPU with no host data for the charged thread (or no thread to charge)."""


LABELS = (
    "G:COMP",
    "G:XFER",
    "H:CTRL",
    "H:APP",
    "H:WAIT_GPU",
    "H:IO",
    "OFF_CPU",
    "G:QUEUE",
    "G:STALL",
    "UNKNOWN",
)
ON_CAUSES = (Cause.G_COMP, Cause.G_XFER)
OFF_CAUSES = tuple(c for c in Cause if c not in ON_CAUSES)
PANELS = ("OFF-CPU^dep", "OFF-CPU^queue", "OFF-GPU^dep", "OFF-GPU^queue")
