"""Build raw CUPTI activity buffers for tests, through gtop's own record dtypes."""

from __future__ import annotations

import numpy as np

from gtop.cupti import records as rec
from gtop.cupti.tables import RECORD_SIZES


def record(kind: int, **values: int) -> bytes:
    """One raw record of ``kind`` (CUPTI 13.0 size) with the given fields set."""
    raw = bytearray(RECORD_SIZES[kind])
    raw[0:4] = kind.to_bytes(4, "little")
    view = np.frombuffer(raw, dtype=rec.record_dtype(kind, len(raw)))
    for name, value in values.items():
        view[name] = value
    return bytes(raw)
