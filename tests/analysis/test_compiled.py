"""A report's hot loops in C (gtop/analysis/loops.c, committed built as loops_blob):
each gives its numpy reference's arrays on random inputs, the blob is what its source
builds to and is loaded from memory, and a report is the same with and without it."""

from __future__ import annotations

import ast
import json
import platform
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from gtop.analysis import compiled, loops_blob
from gtop.analysis import intervals as iv
from gtop.analysis.attribution import slices
from gtop.analysis.attribution.default_mode import (
    BEFORE_NS,
    MARK_NS,
    launch_rows_reference,
    thread_in_reference,
)
from gtop.analysis.attribution.default_mode import own_calls as own_calls_reference
from gtop.analysis.attribution.host_window import _PATH, _SYNC, api_sets_reference, sweep_reference
from gtop.analysis.attribution.partition import (
    NEVER,
    previous_reference,
    stream_keys_reference,
    submit_reference,
)
from gtop.analysis.attribution.records import API, OP, OP_COMM, OP_KERNEL, project_reference
from gtop.analysis.attribution.segments import (
    _CODES,
    Pieces,
    assemble,
    assemble_reference,
    device_segments,
    device_segments_reference,
)
from gtop.analysis.kernels.cuda_activity import kernel_groups_reference
from gtop.core.layouts import KERNEL, ApiClass
from gtop.recordings import codec
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from tests.by_path import load

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(platform.machine() != loops_blob.ARCH, reason="x86-64 blob")

times = st.integers(-50, 50)
raw = st.lists(st.tuples(times, times), max_size=40)


def arrays(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    pair = np.array(pairs, np.int64).reshape(-1, 2)
    return pair[:, 0].copy(), pair[:, 1].copy()


def normal(pairs: list[tuple[int, int]]) -> iv.Spans:
    return iv.union_reference(*arrays(pairs))


def same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_blob_is_what_the_source_builds_to():
    """The committed blob is byte for byte loops.c built by tools/gen_shim_blob.py (a
    changed source with a stale blob fails here)."""
    gen = load("tools/gen_shim_blob.py")
    assert gen.build(gen.LOOPS) == loops_blob.loops_bytes(), (
        "stale blob: run python tools/gen_shim_blob.py"
    )


def test_every_array_given_to_the_c_is_held_by_a_name():
    """Each ``_at(x)`` in compiled.py takes a name (or a name's attribute), never an
    expression: ``_at(np.array(...))`` among a call's arguments frees its array before the
    call runs, and the C reads freed memory (a compare replay crashed with SIGSEGV in CI)."""
    tree = ast.parse((REPO / "gtop/analysis/compiled.py").read_text())
    bad = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "_at"
        and not isinstance(node.args[0], (ast.Name, ast.Attribute))
    ]
    assert not bad, bad


def test_loaded_from_memory_not_a_file():
    """On x86-64 the blob loads (no silent numpy fallback), from an anonymous memory
    file: no path that another user could replace."""
    assert compiled.LIB is not None
    maps = Path("/proc/self/maps").read_text().splitlines()
    mine = [line.split(maxsplit=5)[-1] for line in maps if "gtop-loops" in line]
    assert mine and all(m.startswith("/memfd:gtop-loops") for m in mine), mine


@given(raw, st.booleans())
def test_union(pairs, in_order):
    s, e = arrays(sorted(pairs) if in_order else pairs)
    same(iv.union(s, e), iv.union_reference(s, e))


@given(raw, raw)
def test_intersect(a, b):
    x, y = normal(a), normal(b)
    if len(x) and len(y):
        same(iv.intersect(x, y), iv.intersect_reference(x, y))
    same(iv.subtract(x, y), iv.intersect_reference(x, iv.complement(y, -60, 60)) if len(y) else x)


@given(
    st.lists(times, max_size=40),
    st.lists(times, max_size=60),
    st.booleans(),
    st.sampled_from(["left", "right"]),
)
def test_search(keys, points, in_order, side):
    k = np.sort(np.array(keys, np.int64))
    p = np.array(sorted(points) if in_order else points, np.int64)
    got = compiled.search(k, p, side)
    assert (got is not None) == (in_order or bool(np.all(p[1:] >= p[:-1])))
    want = np.searchsorted(k, p, side=side)
    same((iv.search(k, p, side),), (want,))
    same((iv.last_at_or_before(k, p),), (iv.last_at_or_before_reference(k, p),))
    if got is not None:
        same((got,), (want,))


@given(raw, st.lists(times, max_size=60))
def test_owner(pairs, points):
    spans = normal(pairs)
    p = np.sort(np.array(points, np.int64))
    got = compiled.owner(spans.starts, spans.ends, p)
    assert got is not None
    same((got,), (iv.owner_reference(spans, p),))


def disjoint(pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint records that may touch (a thread's cut state records)."""
    s = normal(pairs)
    ends = s.ends.copy()
    ends[:-1] = np.minimum(ends[:-1], (s.starts[1:] + s.ends[:-1]) // 2)  # some now touch
    return s.starts, ends


@given(raw.filter(lambda p: any(a < b for a, b in p)), raw, raw, raw, raw)
def test_activity(spans, api, sync, gaps, states):
    sets = [tuple(normal(x)) for x in (spans, api, sync, gaps)]
    cut_t, cut_end = disjoint(states)
    got = compiled.activity(sets, cut_t, cut_end)
    assert got is not None
    same(got, sweep_reference(sets, cut_t, cut_end))


@pytest.mark.parametrize(
    "name",
    [
        "train_loop_cupti.gtop",  # CUPTI with API records
        "default-mode/constructed-app.gtop",  # the default agent mode's inferred calls
        "sampling/eager-decode.gtop",  # kernel sampling: repeated ids, untraced spans
    ],
)
def test_report_same_without_the_blob(name, monkeypatch):
    """Where the blob cannot load, the numpy references give the same report."""
    with Recording(REPO / "recordings" / name) as rec:
        with_c = json.dumps(read_report(rec))
    monkeypatch.setattr(compiled, "LIB", None)
    with Recording(REPO / "recordings" / name) as rec:
        without = json.dumps(read_report(rec))
    assert with_c == without


@given(
    st.binary(min_size=KERNEL.dtype.itemsize * 40, max_size=KERNEL.dtype.itemsize * 40),
    st.booleans(),
    st.none() | st.lists(st.integers(0, 19), max_size=30),
)
def test_project(raw_rows, strided, rows):
    """Kernel rows (any bytes; some of them, in any order) projected into the ops table,
    as _fill_ops renames them: the integer fields in C, with numpy's casts (u4 name id
    into the i8 label)."""
    src = np.frombuffer(raw_rows, KERNEL.dtype)[:: 2 if strided else 1]
    pairs = [("t", "t_ns"), ("end", "end_ns"), ("pid", "pid"), ("device", "device")]
    pairs += [("stream", "stream"), ("corr", "correlation"), ("label", "name_id")]
    pairs += [("graph", "graph_id"), ("queued", "queued_ns")]
    index = None if rows is None else np.array(rows, np.int64)
    picked = src if index is None else src[index]
    got, want = np.zeros(len(picked), OP), np.zeros(len(picked), OP)
    assert compiled.project(src, got, pairs, index) == ([] if len(picked) else pairs)
    project_reference(picked, want, pairs)
    assert got.tobytes() == want.tobytes()


MIXED = np.dtype(
    [
        ("t_ns", "<i8"),
        ("end_ns", "<i8"),
        ("a", "<u4"),
        ("b", "<i2"),
        ("c", "u1"),
        ("f", "<f8"),
        ("ok", "?"),
    ]
)


@given(st.binary(min_size=MIXED.itemsize * 30, max_size=MIXED.itemsize * 30), st.booleans())
def test_decode(raw_rows, sorted_times):
    """A chunk of any rows, encoded as the writer encodes it (deltas, minus the start,
    byte planes), decodes to the same bytes with the C columns as with numpy's."""
    rows = np.frombuffer(raw_rows, MIXED).copy()
    if sorted_times:  # the writer's usual case: small deltas
        rows["t_ns"] = np.sort(rows["t_ns"] % 10**9)
    blob, crc = codec.encode(rows)
    got = codec.decode(blob, MIXED, len(rows), crc)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "LIB", None)
        want = codec.decode(blob, MIXED, len(rows), crc)
    assert got.tobytes() == want.tobytes() == rows.tobytes()


@given(st.binary(min_size=OP.itemsize * 30, max_size=OP.itemsize * 30), st.booleans())
def test_stream_keys(raw_rows, strided):
    """Any pid, device and stream (negative pids and devices too)."""
    ops = np.frombuffer(raw_rows, OP)[:: 2 if strided else 1]
    got = compiled.stream_keys(ops)
    assert got is not None
    same((got,), (stream_keys_reference(ops),))


@given(raw, st.lists(st.integers(0, 4), min_size=40, max_size=40), st.integers(1, 30))
def test_occupancy(pairs, codes, slice_ns):
    """Segments sorted by start (overlapping, empty, outside the window too), cut at the
    slice edges: the same ns per code and slice as numpy's sums."""
    s, e = arrays(sorted(pairs))
    c = np.array(codes[: len(s)], np.int64)
    edges = slices.edges(-30, 40, slice_ns)
    got = compiled.occupancy(s, e, c, 5, edges)
    assert got is not None
    same((got,), (slices.occupancy_reference(s, e, c, 5, edges),))


@given(st.lists(st.tuples(st.integers(0, 3), times, times, times), min_size=1, max_size=50))
def test_previous(rows):
    """Rule 2's previous ops per stream, starts in any order (runs of equal ones too)."""
    stream, start, end, sub = (np.array(c, np.int64) for c in zip(*rows))
    start = np.sort(start) if len(rows) % 2 else start  # sorted as the rule's are, or not
    got = compiled.previous(stream, start, end, sub, NEVER)
    assert got is not None
    same(got, previous_reference(stream, start, end, sub))


@given(
    st.lists(st.tuples(st.integers(1, 2), times), max_size=50),
    st.lists(st.tuples(st.integers(1, 4), st.integers(1, 2), raw), max_size=4),
    st.booleans(),
)
def test_thread_in(queries, threads, in_order):
    """Each time's first thread of its process whose spans hold it, times in order (a
    walk) or not (searches)."""
    queries = sorted(queries, key=lambda q: q[1]) if in_order else queries
    pids = np.array([q[0] for q in queries], np.int32)
    at = np.array([q[1] for q in queries], np.int64)
    spans = [(tid, pid, *normal(pairs)) for tid, pid, pairs in threads]
    got, want = pids.copy(), pids.copy()
    assert compiled.thread_in(pids, at, spans, got)
    thread_in_reference(pids, at, spans, want)
    same((got,), (want,))


@given(
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=30),
    st.lists(st.integers(-3, 33), max_size=40),
    st.sampled_from(["<i8", "<i4", "<i2", "u1", "<u4", "<f8", "?"]),
    st.sampled_from([-1, 0, 255, 2**40]),
    st.booleans(),
)
def test_take(values, index, dtype, fill, strided):
    """Any values (a column of records too), indices before, inside and past them."""
    v = np.array(values, np.int64).astype(dtype)
    if strided:
        rows = np.zeros(len(v), [("pad", "u1"), ("v", v.dtype)])
        rows["v"] = v
        v = rows["v"]
    i = np.array(index, np.int64)
    same((iv.take(v, i, fill),), (iv.take_reference(v, i, fill),))
    if len(v) and np.result_type(v.dtype, np.min_scalar_type(fill)) == v.dtype:
        assert compiled.take(v, i, v.dtype.type(fill)) is not None  # C's, not numpy's


@given(st.lists(st.integers(-5, 70), max_size=200), st.integers(1, 80))
def test_group_order(keys, spread):
    """numpy's stable argsort, by counting when there are at most 64 distinct keys."""
    k = np.array(keys, np.int64) % spread
    got = compiled.group_order(k)
    want = np.argsort(k, kind="stable")
    assert (got is not None) == (len(np.unique(k)) <= 64)
    same((iv.group_order(k),), (want,))
    if got is not None:
        same((got,), (want,))


@given(
    st.lists(
        st.tuples(
            st.integers(1, 3), st.integers(-2, 10**6), st.integers(-3, 10**6), st.integers(0, 3)
        ),
        max_size=60,
    ),
    st.sampled_from([(0,), (1,), (0, 5)]),
    st.booleans(),
)
def test_kernel_stats(rows, streams, strided):
    """Per kernel name id of the complete rows (an end, not before a start >= 0): count,
    float total, longest, shortest, last row, whether the grid differs (on any axis);
    each complete row's group and stream."""
    kernels = np.zeros(2 * len(rows), KERNEL)[:: 2 if strided else 1][: len(rows)]
    grid = ("grid_x", "grid_y", "grid_z")
    for axis in grid:
        kernels[axis] = 7
    for i, (name, t, end, axis) in enumerate(rows):
        row = kernels[i : i + 1]
        row["name_id"], row["t_ns"], row["end_ns"] = name, t, end
        row["stream"] = streams[i % len(streams)]
        if axis < 3:
            row[grid[axis]] = 8
    got = compiled.kernel_stats(kernels)
    want = kernel_groups_reference(kernels)
    assert (got is None) == (not len(rows))
    if got is not None and want is None:
        assert not len(got[0])
    elif got is not None:
        assert want is not None and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        assert got[2].dtype == want[2].dtype == np.float64


@given(
    st.lists(
        st.tuples(st.integers(1, 2), st.integers(0, 6), st.booleans(), st.booleans()),
        max_size=40,
    ),
    st.booleans(),
    st.integers(-1, 2),
)
def test_own_calls(rows, ascending, extra):
    """The inferred ops' own launch marks written where the join keeps them, when the
    ops' (pid, correlation) keys ascend; nothing written, and numpy decides, otherwise."""
    if ascending:  # ids in launch order, as the default mode's are
        rows = sorted(rows, key=lambda r: (r[0], r[1]))
    ops = np.zeros(len(rows), OP)
    ops["pid"] = [r[0] for r in rows]
    ops["corr"] = [r[1] for r in rows]
    ops["graph"] = [7 * r[2] for r in rows]
    mask = np.array([r[3] for r in rows], bool)
    launched = int((mask & (ops["graph"] == 0)).sum())
    calls = np.zeros(max(launched + extra, 0), API)
    calls["end"] = np.arange(len(calls)) * 10 + 3
    calls["tid"] = np.arange(len(calls)) + 100
    end, tid = np.full(len(ops), -1, np.int64), np.full(len(ops), -1, np.int32)
    done = compiled.own_calls(ops, mask, calls, end, tid)
    key = (ops["pid"].astype(np.int64) << 32) | ops["corr"].astype(np.int64)
    key = key[mask & (ops["corr"] != 0)]
    assert done == (bool(np.all(key[1:] > key[:-1])) and len(calls) >= launched)
    if not done:
        assert (end == -1).all() and (tid == -1).all()
        return
    own = own_calls_reference(ops, mask, calls)
    assert own is not None
    want_end, want_tid = np.full(len(ops), -1, np.int64), np.full(len(ops), -1, np.int32)
    want_end[own[0]], want_tid[own[0]] = own[1], own[2]
    same((end, tid), (want_end, want_tid))


@given(
    st.lists(
        st.tuples(
            st.integers(-(2**63), 2**63 - 1),
            st.integers(-(2**31), 2**31 - 1),
            st.integers(0, 2**32 - 1),
            st.booleans(),
        ),
        max_size=40,
    ),
    st.booleans(),
)
def test_launch_marks(rows, strided):
    """A launch mark per launched op (any times, wrapping at the ends as numpy's do; any
    pid and correlation), with its pid and the time its thread is looked for."""
    ops = np.zeros(2 * len(rows), OP)[:: 2 if strided else 1][: len(rows)]
    for i, (t, pid, corr, _) in enumerate(rows):
        row = ops[i : i + 1]
        row["t"], row["pid"], row["corr"], row["end"] = t, pid, corr, 5
    launched = np.array([r[3] for r in rows], bool)
    got = compiled.launch_marks(ops, launched, API, MARK_NS, BEFORE_NS, ApiClass.LAUNCH)
    assert got is not None
    marks, pids, at = launch_rows_reference(ops, launched)
    assert got[0].dtype == marks.dtype and got[0].tobytes() == marks.tobytes()
    same(got[1:], (pids.astype(np.int64), at))


op_rows = st.lists(
    st.tuples(
        times,  # start
        st.integers(0, 30),  # length
        st.integers(0, 60),  # queue wait: elig = start - wait
        st.integers(0, 60),  # dependency wait: sub = elig - wait
        st.integers(0, 4),  # kind: kernel, memcpy, memset, comm, other
        st.integers(-1, 3),  # submitting thread (-1: none)
    ),
    max_size=40,
)


def unit_ops(rows: list[tuple[int, ...]], strided: bool) -> tuple[np.ndarray, ...]:
    """Ops in start order with their start, end, submit and eligible times and threads."""
    rows = sorted(rows, key=lambda r: r[0])
    ops = np.zeros(2 * len(rows), OP)[:: 2 if strided else 1][: len(rows)]
    for i, (start, length, _, _, kind, _) in enumerate(rows):
        row = ops[i : i + 1]
        row["t"], row["end"], row["kind"], row["label"] = start, start + length, kind, 7 * i
    start = ops["t"].copy()
    elig = start - np.array([r[2] for r in rows], np.int64).reshape(-1)
    sub = elig - np.array([r[3] for r in rows], np.int64).reshape(-1)
    tid = np.array([r[5] for r in rows], np.int32).reshape(-1)
    return ops, start, ops["end"].copy(), sub, elig, tid


@given(op_rows, st.tuples(times, st.integers(1, 80)), st.booleans(), st.booleans())
@example([(0, 10, 0, 0, 0, 1), (5, 5, 0, 0, 0, 2)], (0, 30), False, False)  # equal ends
def test_segments(rows, window, strided, late):
    """Rules 1-2 and each gap's thread, in C as in numpy: ops of every class, overlapping
    or not, empty ones, waits reaching out of the window, ops without a thread; the C
    declines a submit time after the eligible one (``late``: rule 2 never makes one)."""
    ops, start, end, sub, elig, tid = unit_ops(rows, strided)
    if late and len(rows):
        sub[len(rows) // 2] = elig[len(rows) // 2] + 1
    span = (window[0], window[0] + window[1])
    args = (start, end, sub, elig, ops, tid, 99, (OP_KERNEL, OP_COMM), span, _CODES)
    assert (compiled.segments(*args) is None) == bool(np.any(sub > elig))
    got = device_segments(ops, start, end, sub, elig, tid, 99, span)
    want = device_segments_reference(ops, start, end, sub, elig, tid, 99, span)
    same(tuple(got.host) + got[:4] + got[5:], tuple(want.host) + want[:4] + want[5:])


@given(op_rows, st.tuples(times, st.integers(1, 80)), st.data())
def test_assemble(rows, window, data):
    """The runs with each host run replaced by its pieces (split at random, with random
    causes, the runs dealt to two threads), each segment's thread, kind and label."""
    ops, start, end, sub, elig, tid = unit_ops(rows, False)
    seg = device_segments_reference(
        ops, start, end, sub, elig, tid, 99, (window[0], window[0] + window[1])
    )
    threads = data.draw(st.lists(st.integers(0, 1), min_size=len(seg.host), max_size=len(seg.host)))
    parts = []
    for thread in (0, 1):
        for k in np.flatnonzero(np.array(threads, np.int64) == thread):
            a, b = int(seg.host.starts[k]), int(seg.host.ends[k])
            cuts = sorted(set(data.draw(st.lists(st.integers(a + 1, b), max_size=3))) | {b})
            for lo, hi in zip([a, *cuts[:-1]], cuts, strict=True):
                parts.append((lo, hi, data.draw(st.integers(2, 9)), k))
    pieces = Pieces(
        *(
            np.array(c, t).reshape(-1)
            for c, t in zip(
                zip(*parts, strict=True) if parts else ((), (), (), ()),
                (np.int64, np.int64, np.uint8, np.int64),
                strict=True,
            )
        )
    )
    got = assemble(seg, pieces)
    same(got, assemble_reference(seg, pieces))


@given(
    st.lists(st.tuples(times, st.integers(-3, 20), st.integers(0, 12)), max_size=40),
    raw,
    st.integers(-1, 12),
    st.booleans(),
    st.booleans(),
)
@example([(0, 5, 1), (15, 5, 1)], [(0, 30)], 10, False, True)  # a hole as long as a gap
@example([(0, 5, 1), (5, 3, 1)], [(0, 10)], 10, False, True)  # touching launches: no hole
@example([(0, 5, 2)], [(5, 10)], 10, False, True)  # a call ending where a span starts
def test_api_sets(rows, spans, gap_ns, strided, in_order):
    """A thread's calls overlapping the spans, its synchronising ones, its launch gaps:
    calls of every class, empty ones, overlapping or touching, gaps on or off; calls out
    of time order declined."""
    rows = sorted(rows) if in_order else rows
    apis = np.zeros(2 * len(rows), API)[:: 2 if strided else 1][: len(rows)]
    for i, (t, length, cls) in enumerate(rows):
        row = apis[i : i + 1]
        row["t"], row["end"], row["cls"] = t, t + length, cls
    normal_spans = normal(spans)
    got = compiled.api_sets(apis, normal_spans, _PATH, _SYNC, gap_ns)
    if not bool(np.all(apis["t"][1:] >= apis["t"][:-1])):
        assert got is None
        return
    assert got is not None
    want = api_sets_reference(apis, normal_spans, gap_ns)
    same(got, tuple(x for spans_ in want for x in spans_))


@given(
    st.lists(
        st.tuples(times, times, times, times, st.booleans(), st.integers(-1, 2), times),
        max_size=40,
    ),
    st.tuples(times, st.integers(1, 80)),
    st.booleans(),
    st.booleans(),
)
@example([(10, 20, 0, 0, False, -1, 5)], (0, 30), False, False)  # no stamps, no call: its start
def test_submit_times(rows, window, strided, graph):
    """Each op's submit time (the stamp, else its call's end, else queued, else its
    start; at most its start) and whether it takes part in the window: stamps zero,
    negative or after the start, ops with and without a call; an inferred graph node
    declined."""
    ops = np.zeros(2 * len(rows), OP)[:: 2 if strided else 1][: len(rows)]
    for i, (start, end, submitted, queued, _, _, _) in enumerate(rows):
        row = ops[i : i + 1]
        row["t"], row["end"], row["submitted"], row["queued"] = start, end, submitted, queued
    inferred = np.array([r[4] for r in rows], bool).reshape(-1)
    if graph and len(rows):
        ops["graph"][-1], inferred[-1] = 3, True
    api_tid = np.array([r[5] for r in rows], np.int32).reshape(-1)
    api_end = np.array([r[6] for r in rows], np.int64).reshape(-1)
    start = ops["t"].copy()
    end = np.maximum(ops["end"], start)
    span = (window[0], window[0] + window[1])
    got = compiled.submit_times(ops, api_end, api_tid, start, end, inferred, span)
    if graph and len(rows):
        assert got is None
        return
    assert got is not None
    sub, keep = submit_reference(ops, api_end, api_tid, start, end, inferred, span)
    same(got[:2], (sub, keep))
    at = np.flatnonzero(keep)
    assert got[2:] == (len(at), int(at[0]) if len(at) else -1, int(at[-1]) if len(at) else -1)
