"""Fitting CUPTI's clock onto CLOCK_MONOTONIC."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtop.cupti.clock import ClockTracker, fit


def samples(offset: int, scale: float, n: int, gap: int = 200, start: int = 10**15):
    out = []
    for i in range(n):
        cupti = start + i * 1_000_000_000
        mono = cupti + offset + round((scale - 1) * (cupti - start))
        out.append((mono - gap // 2, cupti, mono + gap // 2))
    return out


@given(
    st.integers(-(10**18), 10**18),
    st.floats(1 - 1e-4, 1 + 1e-4, allow_nan=False),
)
def test_fit_recovers_offset_and_scale(offset, scale):
    s = samples(offset, scale, 30)
    f = fit(s)
    for mono_before, cupti, mono_after in s:
        assert abs(f.map_one(cupti) - (mono_before + mono_after) // 2) <= 2


def test_single_sample_means_pure_offset():
    f = fit([(1_000, 5_000, 1_100)])
    assert f.scale == 1.0 and f.map_one(6_000) == 2_050


def test_noisy_samples_are_ignored():
    s = samples(123, 1.0, 10)
    s[4] = (s[4][0] - 50_000, s[4][1], s[4][2] + 50_000)  # a sample preempted mid-read
    s[5] = (s[5][0] - 1_000_000, s[5][1], s[5][2])
    f = fit(s)
    assert f.map_one(s[0][1]) == s[0][1] + 123


def test_unknown_timestamps_stay_unknown():
    f = fit([(1_000, 5_000, 1_000)])
    out = f.to_mono(np.array([0, 5_000], dtype=np.uint64))
    assert out.tolist() == [-1, 1_000]


def test_tracker_publishes_only_when_the_fit_moves():
    tracker = ClockTracker()
    s = samples(500, 1.0, 10)
    assert tracker.add(s[:5]) is not None
    assert tracker.add(s[5:]) is None
    moved = samples(5_000, 1.0, 120, start=10**15 + 10 * 10**9)
    assert tracker.add(moved) is not None


def test_fit_needs_samples():
    with pytest.raises(ValueError):
        fit([])
