"""Property tests: the partition tiles each unit's window exactly once, whatever the input,
and neither row order nor chunking changes the result."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gtop.analysis import intervals as iv
from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.host_window import LAUNCH_GAP_NS
from gtop.analysis.attribution.partition import attribute, unit_mask
from gtop.analysis.attribution.range_blocks import attribute_range
from gtop.analysis.attribution.records import OP_KERNEL, Records
from gtop.analysis.attribution.sliding_window import AttributionEngine
from tests.analysis.build import api, copy, kernel, records, state, wait

T = 1000
time = st.integers(0, T)


@st.composite
def interval(draw: st.DrawFn, max_len: int = 200) -> tuple[int, int]:
    """Mostly sane intervals, sometimes empty or reversed (bad records must not break
    the partition)."""
    t = draw(time)
    return t, t + draw(st.integers(-5, max_len))


@st.composite
def workloads(draw: st.DrawFn) -> Records:
    n_ops = draw(st.integers(1, 25))
    kernels, copies, apis = [], [], []
    for corr in range(1, n_ops + 1):
        t, end = draw(interval())
        where = {
            "stream": draw(st.sampled_from([7, 8, 9])),
            "pid": draw(st.sampled_from([100, 200])),
            "device": draw(st.sampled_from([0, 1])),
        }
        if draw(st.booleans()):
            kernels.append(
                kernel(
                    t,
                    end,
                    corr=corr,
                    name=draw(st.integers(1, 3)),
                    submitted=draw(st.sampled_from([0, max(t - 20, 1)])),
                    **where,
                )
            )
        else:
            copies.append(copy(t, end, corr=corr, **where))
        if draw(st.booleans()):
            a, b = draw(interval(60))
            apis.append(
                api(
                    a,
                    b,
                    corr=corr,
                    pid=where["pid"],
                    tid=draw(st.sampled_from([100, 101, 200])),
                    cls=draw(st.sampled_from([1, 2, 3, 5])),
                )
            )
    for _ in range(draw(st.integers(0, 6))):
        a, b = draw(interval(60))
        apis.append(
            api(
                a,
                b,
                tid=draw(st.sampled_from([100, 101, 200])),
                cls=draw(st.sampled_from([0, 2, 4])),
            )
        )
    states = []
    for tid in (100, 101, 200):
        for _ in range(draw(st.integers(0, 8))):
            a, b = draw(interval())
            states.append(
                state(
                    a,
                    b,
                    draw(st.integers(0, 2)),
                    reason=draw(st.integers(0, 6)),
                    tid=tid,
                    pid=200 if tid == 200 else 100,
                )
            )
    waits = [
        wait(draw(time), stream=draw(st.sampled_from([7, 8])))
        for _ in range(draw(st.integers(0, 3)))
    ]
    return records(kernels=kernels, copies=copies, apis=apis, states=states, waits=waits)


def permuted(rec: Records, seed: int) -> Records:
    rng = np.random.default_rng(seed)
    return Records(**{k: v[rng.permutation(len(v))] for k, v in vars(rec).items()})


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for unit in a:
        x, y = a[unit], b[unit]
        assert x.totals.tolist() == y.totals.tolist()
        assert x.panels == y.panels and x.service == y.service and x.threads == y.threads
        for field in ("starts", "ends", "causes", "tids", "next_kind", "next_label"):
            assert getattr(x.partition, field).tolist() == getattr(y.partition, field).tolist()


@settings(max_examples=300, deadline=None)
@given(
    workloads(),
    st.integers(-50, T),
    st.integers(1, T + 100),
    st.sampled_from(["device", "process", "stream"]),
    st.sampled_from([0, 30, LAUNCH_GAP_NS]),
)
def test_partition_tiles_each_window_exactly_once(
    rec: Records, t0: int, length: int, level: str, launch_gap_ns: int
) -> None:
    t1 = t0 + length
    result = attribute(rec, t0, t1, level, launch_gap_ns=launch_gap_ns)
    without_gaps = attribute(rec, t0, t1, level, launch_gap_ns=0)
    for unit, res in result.items():
        # Launch gaps only move on-CPU time from H:APP to H:CTRL.
        base = without_gaps[unit].totals
        moved = int(res.totals[Cause.H_CTRL] - base[Cause.H_CTRL])
        assert moved >= 0 and res.totals[Cause.H_APP] == base[Cause.H_APP] - moved
        others = [c for c in Cause if c not in (Cause.H_CTRL, Cause.H_APP)]
        assert res.totals[others].tolist() == base[others].tolist()
        p = res.partition
        assert len(p) > 0
        assert p.starts[0] == t0 and p.ends[-1] == t1
        assert np.all(p.ends > p.starts), "no empty or negative segments"
        assert np.array_equal(p.starts[1:], p.ends[:-1]), "no gaps, no overlaps"
        assert int(res.totals.sum()) == t1 - t0
        assert np.all(res.totals >= 0)
        # ON_GPU is exactly the union of the unit's ops, counted once.
        ops = rec.ops[unit_mask(rec.ops, unit)]
        on = iv.clip(iv.union(ops["t"], ops["end"]), t0, t1)
        k = ops[ops["kind"] == OP_KERNEL]
        comp = iv.clip(iv.union(k["t"], k["end"]), t0, t1)
        assert res.totals[Cause.G_COMP] == comp.measure()
        assert res.totals[Cause.G_COMP] + res.totals[Cause.G_XFER] == on.measure()
        assert 0.0 <= res.gar <= 1.0
        assert all(v >= 0 for v in res.panels.values())


@settings(max_examples=150, deadline=None)
@given(workloads(), st.integers(0, 2**32), st.sampled_from(["device", "process", "stream"]))
def test_row_order_does_not_matter(rec: Records, seed: int, level: str) -> None:
    assert_same(attribute(rec, 0, T, level), attribute(permuted(rec, seed), 0, T, level))


@settings(max_examples=150, deadline=None)
@given(
    workloads(),
    st.integers(1, 8),
    st.integers(50, 2 * T),
    st.integers(0, 300),
    st.integers(0, 2**32),
    st.sampled_from([0, 30, LAUNCH_GAP_NS]),
)
def test_chunked_feeding_equals_all_at_once(
    rec: Records, n_chunks: int, window: int, slack: int, seed: int, launch_gap_ns: int
) -> None:
    whole = AttributionEngine(window, slack, launch_gap_ns=launch_gap_ns)
    whole.feed_records(rec)
    shuffled = permuted(rec, seed)
    chunked = AttributionEngine(window, slack, compact_rows=1, launch_gap_ns=launch_gap_ns)
    pieces = {k: np.array_split(v, n_chunks) for k, v in vars(shuffled).items()}
    for i in range(n_chunks):
        chunked.feed_records(Records(**{k: parts[i] for k, parts in pieces.items()}))
    assert chunked.watermark == whole.watermark
    for level in ("device", "stream"):
        for lag in (0, slack):
            assert_same(chunked.result(level, lag), whole.result(level, lag))
    assert chunked.records().rows() == whole.records().rows()


@settings(max_examples=100, deadline=None)
@given(workloads(), st.integers(25, 400), st.sampled_from(["device", "stream"]))
def test_replay_blocks_cover_the_range_for_every_unit(rec: Records, block: int, level: str) -> None:
    summed = attribute_range(rec, 0, T, level, block_ns=block, margin_ns=300)
    assert set(summed) == set(attribute(rec, -(10**6), 10**6, level))
    on_ops = attribute(rec, 0, T, level)
    for s in summed.values():
        assert (s.t0, s.t1) == (0, T)
        assert int(s.totals.sum()) == T
        if s.unit in on_ops:  # ON_GPU does not depend on how the range is cut
            full = on_ops[s.unit].totals
            assert s.totals[Cause.G_COMP] == full[Cause.G_COMP]
            assert s.totals[Cause.G_XFER] == full[Cause.G_XFER]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 9)), max_size=40),
    st.lists(st.tuples(st.integers(-1, 7), st.integers(-1, 11)), max_size=40),
)
def test_pair_ranks_search_like_the_pairs(
    table: list[tuple[int, int]], queries: list[tuple[int, int]]
) -> None:
    """Searching the int64 codes finds what a search of the (key, time) pairs does."""
    pair = np.dtype([("key", "<i8"), ("t", "<i8")])
    pairs = np.sort(np.array(table, pair), order=["key", "t"])
    asked = np.array(queries, pair)
    codes, qcodes = iv.pair_ranks(pairs["key"], pairs["t"], asked["key"], asked["t"])
    assert bool(np.all(codes[1:] >= codes[:-1]))
    expected = np.searchsorted(pairs, asked, side="right")
    assert np.searchsorted(codes, qcodes, side="right").tolist() == expected.tolist()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-5, 40), max_size=30),
    st.lists(st.integers(-8, 45), max_size=300),
    st.booleans(),
)
def test_last_at_or_before_is_a_search(keys: list[int], points: list[int], ordered: bool) -> None:
    """Each way it takes (few points, many more points, about as many, unsorted points)
    finds what ``searchsorted(keys, points, "right") - 1`` does."""
    k = np.sort(np.array(keys, np.int64))
    p = np.array(sorted(points) if ordered else points, np.int64)
    expected = np.searchsorted(k, p, side="right") - 1
    assert iv.last_at_or_before(k, p).tolist() == expected.tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-3, 3), st.just(7), st.integers(0, 2**40), st.integers(0, 70_000)),
        max_size=40,
    )
)
def test_unique_columns_is_numpys_unique_rows(rows: list[tuple[int, int, int, int]]) -> None:
    """Distinct rows and inverse as ``np.unique(axis=0)`` gives them, for columns of one
    value, negative, wide and small ids, of mixed dtypes."""
    table = np.array(rows, np.int64).reshape(-1, 4)
    columns = [
        table[:, 0].astype(np.int32),
        table[:, 1].astype(np.uint8),
        table[:, 2],
        table[:, 3].astype(np.uint32),
    ]
    distinct, inverse = iv.unique_columns(columns)
    expected, where = np.unique(table, axis=0, return_inverse=True)
    assert distinct.tolist() == expected.reshape(-1, 4).tolist()
    assert inverse.tolist() == where.reshape(-1).tolist()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 9), st.integers(0, 3)), min_size=1, max_size=30),
    st.integers(1, 7),
    st.integers(0, 20),
)
def test_occupancy_sums_each_slice(
    segments: list[tuple[int, int]], slice_ns: int, extra: int
) -> None:
    """Each slice's ns per code is what the segments cover of it, for slices of one
    length (by division) and for uneven edges (by a search) alike."""
    from gtop.analysis.attribution import slices

    lengths = np.array([n for n, _ in segments], np.int64)
    ends = 100 + np.cumsum(lengths)
    starts, codes = ends - lengths, np.array([c for _, c in segments])
    t0, t1 = int(starts[0]) + extra % 5, int(ends[-1]) - extra // 5
    if t1 <= t0:
        return
    even = slices.edges(t0, t1, slice_ns)
    uneven = np.unique(np.append(even, (even[:-1] + even[1:]) // 2))
    for edges in (even, uneven):
        got = slices.occupancy_of(starts, ends, codes, 4, edges)
        for k in range(len(edges) - 1):
            lo, hi = edges[k], edges[k + 1]
            cover = np.clip(np.minimum(ends, hi) - np.maximum(starts, lo), 0, None)
            assert got[k].tolist() == np.bincount(codes, weights=cover, minlength=4).tolist()
