"""Decoding raw CUPTI buffers: walking mixed records, each kind's mapping, names, markers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from raw_records import record

from gtop.analysis.attribution.records import Records
from gtop.core.layouts import ApiClass
from gtop.cupti import records as rec
from gtop.cupti.clock import ClockFit
from gtop.cupti.decode import Decoder, NameTable, api_class, walk
from gtop.cupti.tables import RECORD_SIZES, RUNTIME_CBIDS

CLOCK = ClockFit(offset_ns=-1_000, scale=1.0, ref_ns=0, t_ns=0)
KINDS = [rec.CONCURRENT_KERNEL, rec.MEMCPY, rec.MEMSET, rec.RUNTIME, rec.SYNCHRONIZATION]


def kernel(i: int, name: int = 0xABC000) -> bytes:
    return record(
        rec.CONCURRENT_KERNEL,
        start=10_000 + i,
        end=20_000 + i,
        stream_id=3,
        correlation_id=i,
        name=name,
        grid_x=4,
        block_x=256,
        registers=40,
    )


def flatten(runs) -> list[tuple[int, int]]:
    """(offset, kind) of every record the runs describe, in buffer order."""
    return sorted((r.start + i * r.step, r.kind) for r in runs for i in range(r.count))


@given(st.lists(st.sampled_from(KINDS), max_size=300))
def test_walk_finds_every_record_in_order(kinds):
    buf = b"".join(record(k) for k in kinds)
    runs, rest = walk(buf, RECORD_SIZES)
    assert rest == 0
    expected, off = [], 0
    for k in kinds:
        expected.append((off, k))
        off += RECORD_SIZES[k]
    assert flatten(runs) == expected


@given(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
    st.integers(0, 400),
    st.lists(st.sampled_from(KINDS), max_size=20),
)
def test_walk_of_repeating_patterns_with_noise(pattern, reps, noise):
    kinds = pattern * reps + noise + pattern * 3
    buf = b"".join(record(k) for k in kinds)
    runs, rest = walk(buf, RECORD_SIZES)
    assert rest == 0 and [k for _, k in flatten(runs)] == kinds
    if reps > 100:
        assert len(runs) <= 80  # checked in bulk: the runs do not grow with the repetitions


def test_batches_come_out_in_time_order():
    kinds = [rec.RUNTIME, rec.DRIVER, rec.CONCURRENT_KERNEL] * 50 + [rec.CONCURRENT_KERNEL] * 3
    buf = b"".join(record(k, correlation_id=i, start=1000 + i) for i, k in enumerate(kinds))
    out = Decoder(1, NameTable()).decode(buf, CLOCK).batches
    corr = out["kernel"]["correlation"].tolist()
    assert corr == sorted(corr) and len(corr) == 53
    assert out["api"]["correlation"].tolist() == sorted(out["api"]["correlation"].tolist())


def test_walk_stops_at_unknown_kind_and_reports_the_rest():
    buf = kernel(0) + (99).to_bytes(4, "little") + bytes(60) + kernel(1)
    runs, rest = walk(buf, RECORD_SIZES)
    assert [(r.kind, r.count) for r in runs] == [(rec.CONCURRENT_KERNEL, 1)]
    assert rest == len(buf) - RECORD_SIZES[rec.CONCURRENT_KERNEL]


def test_larger_stride_from_newer_cupti_is_honoured():
    stride = RECORD_SIZES[rec.CONCURRENT_KERNEL] + 32  # e.g. a later kernel record version
    one = kernel(5) + bytes(32)
    dec = Decoder(7, NameTable())
    dec.set_sizes({str(rec.CONCURRENT_KERNEL): stride})
    out = dec.decode(one * 3, CLOCK)
    assert out.records == {rec.CONCURRENT_KERNEL: 3} and out.undecoded_bytes == 0
    assert (out.batches["kernel"]["correlation"] == 5).all()


def test_kernel_fields_and_clock_mapping():
    names = NameTable()
    dec = Decoder(42, names)
    buf = b"".join(kernel(i, name=0x1000 + (i % 2)) for i in range(100))
    k = dec.decode(buf, CLOCK).batches["kernel"]
    assert len(k) == 100
    assert k["t_ns"][3] == 10_003 - 1_000 and k["end_ns"][3] == 20_003 - 1_000
    assert (k["queued_ns"] == -1).all()  # not collected: unknown, not zero
    assert (k["pid"] == 42).all() and (k["stream"] == 3).all()
    assert (k["grid_x"] == 4).all() and (k["block_x"] == 256).all()
    assert (k["registers"] == 40).all()
    assert len(set(k["name_id"].tolist())) == 2
    assert names.take_pending(42) == [0x1000, 0x1001]
    assert names.take_pending(42) == []  # asked once
    resolved = names.resolved(42, {0x1000: "_Z1av", 0x1001: None})
    assert sorted(n for _, _, n in resolved) == ["<0x1001>", "_Z1av"]
    assert {kind for kind, _, _ in resolved} == {"kernel_name"}


def test_graph_launches_become_whole_graph_kernel_rows():
    # graph-level tracing: one GRAPH_TRACE record per launch, beside eager kernels
    names = NameTable()
    dec = Decoder(7, names)
    graphs = [
        record(rec.GRAPH_TRACE, start=30_000 + i, end=31_000 + i, graph_id=5 + i % 2, stream_id=9)
        for i in range(4)
    ]
    first = dec.decode(kernel(0) + b"".join(graphs), CLOCK)
    k = first.batches["kernel"]
    whole = k[k["graph_id"] != 0]
    assert len(k) == 5 and len(whole) == 4
    assert (whole["graph_node_id"] == 0).all() and (whole["stream"] == 9).all()
    assert whole["t_ns"][0] == 30_000 - 1_000 and whole["end_ns"][0] == 31_000 - 1_000
    assert sorted(n for _, _, n in first.names) == ["CUDA graph 5", "CUDA graph 6"]
    ids = {n: i for _, i, n in first.names}
    assert set(whole["name_id"].tolist()) == set(ids.values())
    again = dec.decode(graphs[0], CLOCK)  # a name is published once, its id stays
    assert again.names == [] and again.batches["kernel"]["name_id"][0] == ids["CUDA graph 5"]
    assert names.take_pending(7) == [0xABC000]  # the eager kernel's pointer only
    # for attribution, each whole-graph row is one host launch, not a node of a replay
    assert (Records.from_streams({"kernel": k}).ops["graph"] == 0).all()


def test_each_session_has_its_own_name_ids():
    # after cuptiFinalize, CUPTI may reuse a name pointer for another kernel
    names = NameTable()
    one = Decoder(9, names, session=100).decode(kernel(0, name=0x5000), CLOCK)
    two = Decoder(9, names, session=101).decode(kernel(0, name=0x5000), CLOCK)
    a, b = one.batches["kernel"], two.batches["kernel"]
    assert a["pid"][0] == b["pid"][0] == 9 and a["name_id"][0] != b["name_id"][0]
    assert names.take_pending(100) == [0x5000] == names.take_pending(101)


def test_name_ids_are_per_process():
    names = NameTable()
    a = names.ids(1, "kernel_name", np.array([5, 5, 0], dtype=np.uint64))
    b = names.ids(2, "kernel_name", np.array([5], dtype=np.uint64))
    assert a[0] == a[1] != 0 and a[2] == 0 and b[0] != a[0]


def test_memcpy_memset_sync_api_overhead():
    buf = b"".join(
        [
            record(
                rec.MEMCPY,
                copy_kind=2,
                src_kind=3,
                dst_kind=1,
                bytes=1 << 20,
                start=5,
                end=9,
                stream_id=2,
                correlation_id=11,
            ),
            record(rec.MEMSET, bytes=64, memory_kind=3, start=5, end=6, stream_id=2),
            record(rec.SYNCHRONIZATION, type=3, start=100, end=200, stream_id=2, cuda_event_id=9),
            record(rec.RUNTIME, cbid=211, start=1, end=2, thread_id=77, correlation_id=11),
            record(rec.DRIVER, cbid=307, start=1, end=2, thread_id=77, correlation_id=12),
            record(
                rec.OVERHEAD,
                overhead_kind=1,
                object_kind=rec.OBJECT_THREAD,
                object_tid=77,
                start=3,
                end=4,
            ),
        ]
    )
    out = Decoder(1, NameTable()).decode(buf, CLOCK).batches
    m = out["memcpy"][0]
    assert (m["copy_kind"], m["src_kind"], m["dst_kind"], m["bytes"]) == (2, 3, 1, 1 << 20)
    assert out["memset"][0]["mem_kind"] == 3 and out["memset"][0]["bytes"] == 64
    s = out["sync"][0]
    assert (s["sync_type"], s["event"], s["end_ns"] - s["t_ns"]) == (3, 9, 100)
    api = out["api"]
    assert api["domain"].tolist() == [0, 1] and (api["tid"] == 77).all()
    assert api["api_class"].tolist() == [ApiClass.LAUNCH, ApiClass.LAUNCH]
    assert api["correlation"].tolist() == [11, 12]
    assert out["overhead"][0]["tid"] == 77


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("cudaLaunchKernel", ApiClass.LAUNCH),
        ("cudaGraphLaunch", ApiClass.GRAPH_LAUNCH),
        ("cudaDeviceSynchronize", ApiClass.SYNC),
        ("cudaMemcpyAsync", ApiClass.MEMCPY),
        ("cudaMemcpy", ApiClass.SYNC),  # blocking: .cpu()
        ("cudaMemcpy2D", ApiClass.SYNC),
        ("cudaMalloc", ApiClass.ALLOC),
        ("cudaEventQuery", ApiClass.QUERY),
        ("cudaGetDevice", ApiClass.OTHER),  # a plain call, not a poll of the GPU
        ("cudaStreamWaitEvent", ApiClass.OTHER),
    ],
)
def test_runtime_api_classes(name, cls):
    cbid = next(k for k, v in RUNTIME_CBIDS.items() if v == name)
    assert api_class(rec.RUNTIME, np.array([cbid])).tolist() == [cls]


def test_unknown_cbid_is_other():
    assert api_class(rec.RUNTIME, np.array([99999])).tolist() == [ApiClass.OTHER]


def test_markers_pair_start_and_end_across_buffers():
    names = NameTable()
    dec = Decoder(1, names)
    thread = {"object_kind": rec.OBJECT_THREAD, "object_tid": 5}
    first = record(rec.MARKER, flags=rec.MARKER_START, timestamp=100, id=1, name=0x50, **thread)
    first += record(rec.MARKER, flags=rec.MARKER_INSTANT, timestamp=150, id=2, name=0x60, **thread)
    second = record(rec.MARKER, flags=rec.MARKER_END, timestamp=300, id=1, **thread)
    a = dec.decode(first, CLOCK).batches["marker"]
    b = dec.decode(second, CLOCK).batches["marker"]
    assert len(a) == 1 and a[0]["t_ns"] == a[0]["end_ns"] == 150 - 1_000
    assert len(b) == 1 and (b[0]["t_ns"], b[0]["end_ns"]) == (100 - 1_000, 300 - 1_000)
    assert b[0]["tid"] == 5 and b[0]["name_id"] != 0
    assert sorted(names.take_pending(1)) == [0x50, 0x60]


def test_records_without_start_are_left_out_and_counted():
    """An agent attached to a running process got a kernel with start 0 on an H200: it
    cannot be placed in time (it made a recording start at -1 ns)."""
    buf = kernel(1) + record(rec.CONCURRENT_KERNEL, start=0, end=0)
    out = Decoder(1, NameTable()).decode(buf, CLOCK)
    assert len(out.batches["kernel"]) == 1 and out.batches["kernel"]["t_ns"][0] >= 0
    assert out.incomplete == 1


def test_records_without_end_are_counted_incomplete():
    buf = kernel(1) + record(rec.CONCURRENT_KERNEL, start=5, end=0) + record(rec.MEMCPY, start=1)
    out = Decoder(1, NameTable()).decode(buf, CLOCK)
    assert out.incomplete == 2
    assert sorted(out.batches["kernel"]["end_ns"].tolist())[0] == -1


def _field_values(kind: int) -> st.SearchStrategy[dict[str, int]]:
    """Any value each field's type can hold, edges weighted in (0, max, min, -1)."""
    out = {}
    for name, (fmt, _) in rec.FIELDS[kind].items():
        info = np.iinfo(np.dtype(fmt))
        edges = st.sampled_from(sorted({0, 1, int(info.max), int(info.min), max(-1, info.min)}))
        out[name] = st.one_of(edges, st.integers(int(info.min), int(info.max)))
    return st.fixed_dictionaries(out)


RECORD = st.sampled_from(sorted(rec.FIELDS)).flatmap(
    lambda kind: st.tuples(st.just(kind), _field_values(kind))
)


@given(st.lists(RECORD, min_size=1, max_size=40))
def test_decode_never_raises_on_any_field_values(records):
    """Real buffers carry unsigned ids next to -1 markers, unknown enum values (object,
    overhead, copy and sync kinds), zero end times and wild pointers: none may raise."""
    import warnings

    buf = b"".join(record(kind, **values) for kind, values in records)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow/cast warnings too
        out = Decoder(3, NameTable()).decode(buf, CLOCK)
    assert sum(out.records.values()) == len(records) and out.undecoded_bytes == 0
    gpu = [out.batches[s] for s in ("kernel", "memcpy", "memset") if s in out.batches]
    assert all((b["t_ns"] != -1).all() for b in gpu)
    assert out.incomplete >= sum(int((b["end_ns"] < 0).sum()) for b in gpu)


@given(st.lists(RECORD, min_size=1, max_size=40))
def test_summaries_of_any_decoded_records_never_raise(records):
    """The kernel, copy and API tables take whatever the decoder gives them."""
    from gtop.analysis.kernels.cuda_activity import api_summary, kernel_summary, memcpy_summary

    buf = b"".join(record(kind, **values) for kind, values in records)
    out = Decoder(3, NameTable()).decode(buf, CLOCK).batches
    if "kernel" in out:
        rows = kernel_summary(out["kernel"], {})
        assert sum(r.count for r in rows) <= len(out["kernel"])
    if "memcpy" in out:
        memcpy_summary(out["memcpy"])
    if "api" in out:
        api_summary(out["api"])


@pytest.mark.parametrize("kind", [rec.OVERHEAD, rec.MARKER])
def test_thread_id_is_minus_one_for_process_objects(kind):
    # object_tid is uint32: -1 must not wrap to 4294967295 (or raise, on other numpys)
    base = {"flags": rec.MARKER_INSTANT} if kind == rec.MARKER else {}
    buf = record(kind, object_kind=1, object_tid=0xFFFFFFFF, **base) + record(
        kind, object_kind=rec.OBJECT_THREAD, object_tid=4_000_000, **base
    )
    out = Decoder(3, NameTable()).decode(buf, CLOCK).batches
    stream = "overhead" if kind == rec.OVERHEAD else "marker"
    assert sorted(out[stream]["tid"].tolist()) == [-1, 4_000_000]
