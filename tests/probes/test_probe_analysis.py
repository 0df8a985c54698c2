"""The probes' analyses on records in their real layouts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gtop.probes.catalog import block_sched, mem_trace, tensorop

from .records import T0, block_records, mem_records, simulated_launch, tensorop_records


def test_block_sched_by_hand() -> None:
    rows = [
        (0, 0, 3, 0, 100),
        (1, 0, 3, 0, 100),
        (4, 0, 3, 110, 200),
        (2, 0, 77, 5, 100),
        (3, 0, 77, 5, 50),
        (5, 0, 77, 60, 300),
        (5, 0, 77, 60, 250),  # the same warp leaving through a second exit
    ]
    s = block_sched.analyse(block_records(rows))
    assert (s.blocks, s.sms, s.duration_ns) == (6, 2, 300)
    assert s.per_sm.sm.tolist() == [3, 77]
    assert s.block[s.smid == 3].tolist() == [0, 1, 4]
    assert s.block[s.smid == 77].tolist() == [2, 3, 5]
    assert s.per_sm.concurrency.tolist() == [2, 2]
    assert s.per_sm.exec_ns.tolist() == [290, 380]
    assert s.per_sm.sched_ns.tolist() == [10, 20]
    assert s.per_sm.busy_ns.tolist() == [190, 295]
    assert s.wave[s.smid == 3].tolist() == [0, 0, 1]
    assert (s.tail_ns, round(s.tail_frac, 3)) == (100, 0.333)
    assert s.duration_pct[100] == 240


def test_block_sched_simulated_waves_and_tail() -> None:
    rec = simulated_launch(blocks=400, sm_ids=tuple(range(0, 264, 2)), slots=2)
    s = block_sched.analyse(rec)
    assert s.blocks == 400 and s.sms == 132
    assert s.wave.max() == 1  # 400 blocks on 264 slots: two waves
    assert 0 < s.tail_frac < 1
    assert int(s.per_sm.blocks.sum()) == 400


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 3), st.sampled_from([1, 9, 130, 2000])),
        min_size=1,
        max_size=60,
        unique_by=lambda r: (r[0], r[1]),
    ),
    st.data(),
)
def test_block_sched_invariants(keys: list, data: st.DataObject) -> None:
    sm_of = {}
    rows = []
    for b, w, sm in keys:
        sm = sm_of.setdefault(b, sm)
        s = data.draw(st.integers(0, 10_000))
        rows.append((b, w, sm, s, s + data.draw(st.integers(1, 5_000))))
    s = block_sched.analyse(block_records(rows))
    assert s.blocks == len({r[0] for r in rows})
    assert int(s.per_sm.blocks.sum()) == s.blocks
    for sm in s.per_sm.sm:
        starts = s.start[s.smid == sm]
        assert (np.diff(starts) >= 0).all()
    assert (s.per_sm.busy_ns <= s.duration_ns).all()
    assert (s.per_sm.exec_ns >= s.per_sm.busy_ns).all()
    assert (s.per_sm.sched_ns >= 0).all()


def test_block_sched_empty() -> None:
    with pytest.raises(ValueError, match="no block_sched records"):
        block_sched.analyse(block_records([]))


def test_tensorop_summary_and_timeline() -> None:
    rec = tensorop_records(n_warps=8, per_warp=512)
    rec[3]["first_clock"] = 0  # a warp without tensor ops
    rec[3]["count"][0] = 0
    rec[3]["cycles"][0] = 0
    t = tensorop.analyse(rec, ["wgmma.m64n128k16.f32.f16.f16"])
    stats = t.per_class["wgmma.m64n128k16.f32.f16.f16"]
    assert stats.count == 7 * 512 and stats.cycles_per_op == 12.0
    assert len(t.start) == 7 and t.start.min() == 0 and (t.end > t.start).all()
    r = rec[0]
    assert r["exit_ns"] - r["exit_clock"] + r["first_clock"] - T0 > 0
    assert t.wait_count == 8 * 64 and (t.ops == 512).all()


def test_dmat_counts_labels_and_zoom() -> None:
    rec, ptrs = mem_records(n=3000)
    d = mem_trace.dmat(rec, bins=50, pointers=ptrs)
    assert d.counts.sum() == 3000 and d.counts.shape == (50, len(d.pages))
    assert (np.diff(d.pages) > 0).all()
    assert set(d.labels) == {"x", "y", "out"}
    assert d.unit == "ns"
    half = mem_trace.dmat(rec, bins=10, window=(0, d.t_hi // 2), pointers=ptrs)
    assert 0 < half.counts.sum() < 3000 and half.t_hi == d.t_hi // 2


def test_dmat_sm_clock_alignment_normalises_each_sm() -> None:
    rec, _ = mem_records(n=3000)
    t = mem_trace.timeline(rec, "sm_clock")
    for sm in np.unique(rec["smid"]):
        assert t[rec["smid"] == sm].min() == 0
    d = mem_trace.dmat(rec, bins=20, align="sm_clock")
    assert d.unit == "cycles" and d.counts.sum() == 3000
    with pytest.raises(ValueError, match="unknown time alignment"):
        mem_trace.timeline(rec, "wall")
