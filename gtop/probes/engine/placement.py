"""Where a probe's records come from and where they go: the two choices a site makes.

Apart from :mod:`.probe` (which needs numpy) so that the command line can offer them.
"""

from __future__ import annotations

from enum import Enum


class Level(Enum):
    """Who writes a record: one lane per warp (the lowest guarded lane) or every thread."""

    WARP = "warp"
    THREAD = "thread"


class MapKind(Enum):
    """Where a record goes: a ring (atomic slot + overflow count) or a fixed array slot
    indexed by (linear block, warp) or (linear block, thread)."""

    RING = "ring"
    ARRAY = "array"
