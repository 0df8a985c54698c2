"""Panels and inflation factors stay bounded (issue 13): over any window of any real
recording each of the four off panels is at most the window, and each inflation factor
at most (window + service) / service."""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gtop.analysis.attribution.range_blocks import attribute_range
from gtop.analysis.attribution.records import Records
from gtop.analysis.report.document import ATTRIBUTION_STREAMS
from gtop.recordings.clipped import active
from gtop.recordings.reader import Recording

from .recordings import RECORDINGS

WITH_CUPTI = sorted(p.name for p in RECORDINGS.glob("*.gtop") if "kernel" in Recording(p).streams)
SPAN_NS = 1_500_000_000
"""The longest window drawn: long enough to hold many steps, short enough to be quick."""


@functools.cache
def loaded(name: str) -> tuple[Records, int, int]:
    """The recording's records and its active window (where the GPU work is)."""
    with Recording(RECORDINGS / name) as rec:
        batches = {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}
        window = active(rec)
    records = Records.from_streams({k: v for k, v in batches.items() if len(v)})
    return records, window.t0, window.t1


@pytest.mark.parametrize("name", WITH_CUPTI)
@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(start=st.floats(0, 1), length=st.floats(0.01, 1))
def test_panels_never_exceed_the_window(name: str, start: float, length: float) -> None:
    records, r0, r1 = loaded(name)
    t0 = r0 + int(start * (r1 - r0))
    t1 = min(r1, t0 + max(1, int(length * SPAN_NS)))
    if t1 <= t0:
        return
    for res in attribute_range(records, t0, t1).values():
        window = t1 - t0
        assert all(v <= window for v in res.panels.values()), res.panels
        for resource, factors in res.inflation().items():
            service = res.service[resource]
            for value in factors.values():
                assert math.isnan(value) or value <= (window + service) / service + 1e-9
