"""The Perfetto export, decoded by the ``perfetto`` package's own ``perfetto_trace_pb2``.

trace_processor itself cannot run here (the package downloads its binary at first use and
this machine has no network), so :func:`slices_as_trace_processor_pairs` applies its
rule: all events sorted by timestamp, ties in file order; per track a begin pushes a
slice and an end closes the innermost open one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from gtop.analysis.kernels.cuda_activity import api_name
from gtop.cli import main
from gtop.recordings.exporters import tracks
from gtop.recordings.exporters.tracks import state_label
from gtop.recordings.reader import Recording
from tests.exporters.conftest import SLOW_LOADER

TrackEvent = pb.TrackEvent


class Decoded:
    """A trace's packets, with what the sequence interned and described."""

    def __init__(self, path: Path) -> None:
        trace = pb.Trace()
        trace.ParseFromString(path.read_bytes())
        self.packets = list(trace.packet)
        self.names: dict[int, str] = {}
        self.annotation_names: dict[int, str] = {}
        self.tracks: dict[int, pb.TrackDescriptor] = {}
        self.events: list[tuple[int, int, pb.TrackEvent]] = []  # (ts, file order, event)
        for order, packet in enumerate(self.packets):
            assert packet.trusted_packet_sequence_id == self.packets[0].trusted_packet_sequence_id
            for n in packet.interned_data.event_names:
                assert n.iid not in self.names, "an event name interned twice"
                self.names[n.iid] = n.name
            for n in packet.interned_data.debug_annotation_names:
                self.annotation_names[n.iid] = n.name
            if packet.HasField("track_descriptor"):
                desc = packet.track_descriptor
                assert desc.uuid not in self.tracks
                self.tracks[desc.uuid] = desc
            if packet.HasField("track_event"):
                self.events.append((packet.timestamp, order, packet.track_event))

    def slices_as_trace_processor_pairs(self) -> dict[int, list[tuple[int, int, str]]]:
        """Per track uuid, the (start, end, name) slices trace_processor would build."""
        open_: dict[int, list[tuple[int, str]]] = defaultdict(list)
        out: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
        for ts, _, event in sorted(self.events, key=lambda e: (e[0], e[1])):
            if event.type == TrackEvent.TYPE_SLICE_BEGIN:
                open_[event.track_uuid].append((ts, self.names[event.name_iid]))
            elif event.type == TrackEvent.TYPE_SLICE_END:
                start, name = open_[event.track_uuid].pop()
                out[event.track_uuid].append((start, ts, name))
        assert not any(open_.values()), "slices left open"
        return out


def unknown_fields(message: Message) -> list[str]:
    """Fields the schema does not know (a wrong field number or wire type), recursively."""
    out = [f"{message.DESCRIPTOR.name}.{f.field_number}" for f in UnknownFieldSet(message)]
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        for item in value if field.is_repeated else [value]:
            out += unknown_fields(item)
    return out


@pytest.fixture(scope="module")
def decoded(export: Callable[..., Path]) -> Decoded:
    return Decoded(export("perfetto", name="t.perfetto-trace"))


def test_every_field_is_one_perfettos_schema_knows(decoded: Decoded) -> None:
    kinds = Counter(p.WhichOneof("data") for p in decoded.packets)
    assert kinds["track_descriptor"] > 30 and kinds["track_event"] > 200_000
    # every packet that is not an event, and the first events of each kind of track
    sample = [p for p in decoded.packets if not p.HasField("track_event")]
    seen: Counter = Counter()
    for packet in decoded.packets:
        key = (packet.track_event.track_uuid, packet.track_event.type)
        if packet.HasField("track_event") and seen[key] < 50:
            seen[key] += 1
            sample.append(packet)
    assert [f for p in sample for f in unknown_fields(p)] == []


def test_every_event_is_on_a_described_track_with_an_interned_name(decoded: Decoded) -> None:
    assert decoded.packets[0].sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    for _, _, event in decoded.events:
        assert event.track_uuid in decoded.tracks
        if event.type == TrackEvent.TYPE_SLICE_BEGIN:
            assert event.name_iid in decoded.names and not event.HasField("name")
        for note in event.debug_annotations:
            assert note.name_iid in decoded.annotation_names
    # every parent a track points to is described too
    for desc in decoded.tracks.values():
        assert not desc.HasField("parent_uuid") or desc.parent_uuid in decoded.tracks
    # names are interned once each, and repeated ones are the point: far fewer than slices
    begins = sum(e.type == TrackEvent.TYPE_SLICE_BEGIN for _, _, e in decoded.events)
    assert len(decoded.names) * 100 < begins


def test_threads_and_processes_have_descriptors_with_names(decoded: Decoded) -> None:
    with Recording(SLOW_LOADER) as rec:
        threads = {int(e.key): e.value for e in rec.entities("thread")}
        states = rec.read("thread_state")
        processes = {int(e.key): e.value for e in rec.entities("process")}
    described = {d.thread.tid: d.thread for d in decoded.tracks.values() if d.HasField("thread")}
    for tid in np.unique(states["tid"]).tolist():
        assert described[tid].pid == int(states["pid"][states["tid"] == tid][0])
        assert described[tid].thread_name == f"{threads[tid]['name']} ({tid})"
    named = {d.process.pid: d.process for d in decoded.tracks.values() if d.HasField("process")}
    for pid in {t.pid for t in described.values()}:
        assert named[pid].process_name == f"{processes[pid]['name']} ({pid})"
        assert list(named[pid].cmdline) == processes[pid]["cmdline"]
    assert any(p.process_name.startswith("GPU 0 NVIDIA H100") for p in named.values())


def test_thread_states_pair_as_recorded_under_trace_processors_sort(decoded: Decoded) -> None:
    """Every recorded thread-state interval comes back whole: same thread, start, end and
    state, when begin/end events are paired the way trace_processor pairs them."""
    pairs = decoded.slices_as_trace_processor_pairs()
    thread_of = {u: d.thread.tid for u, d in decoded.tracks.items() if d.HasField("thread")}
    got = Counter()
    for uuid, slices in pairs.items():
        desc = decoded.tracks[uuid]
        if desc.name == "thread state":
            tid = thread_of[desc.parent_uuid]
            got.update((tid, s, e, n) for s, e, n in slices)
    with Recording(SLOW_LOADER) as rec:
        rows = rec.read("thread_state")
    want = Counter(
        (tid, s, max(s, e), state_label(st, r))
        for tid, s, e, st, r in zip(
            *(rows[k].tolist() for k in ("tid", "t_ns", "end_ns", "state", "reason"))
        )
    )
    assert sum(want.values()) == len(rows) > 50_000
    assert got == want


def test_small_windows_pair_the_same(
    decoded: Decoded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slices that span the windows the exporter reads in (here ~3000 rows, so hundreds
    of windows) pair as they do when written from larger ones."""
    monkeypatch.setattr(tracks, "WINDOW_ROWS", 3000)
    out = tmp_path / "small.perfetto-trace"
    assert main(["export", str(SLOW_LOADER), "-o", str(out)]) == 0
    small = Decoded(out)

    def by_name(d: Decoded) -> Counter:
        pairs = d.slices_as_trace_processor_pairs()
        return Counter((d.tracks[u].name, *x) for u, slices in pairs.items() for x in slices)

    assert by_name(small) == by_name(decoded)


def test_api_calls_and_gpu_work_pair_as_recorded_with_function_names(decoded: Decoded) -> None:
    pairs = decoded.slices_as_trace_processor_pairs()
    with Recording(SLOW_LOADER) as rec:
        api = rec.read("api")
        kernels = rec.read("kernel")
    thread_tracks = {u for u, d in decoded.tracks.items() if d.HasField("thread")}
    got = Counter((s, e, n) for u in thread_tracks for s, e, n in pairs.get(u, []))
    want = Counter(
        (s, e, api_name(d, c))
        for s, e, d, c in zip(*(api[k].tolist() for k in ("t_ns", "end_ns", "domain", "cbid")))
    )
    assert got == want
    assert not any("cbid" in name for name in decoded.names.values())
    streams = {u for u, d in decoded.tracks.items() if d.name.startswith("stream ")}
    on_gpu = [x for u in streams for x in pairs[u]]
    assert len(on_gpu) == len(kernels) + sum(
        len(r) for r in (Recording(SLOW_LOADER).read(s) for s in ("memcpy", "memset"))
    )
    # kernel names are demangled: none left in their _Z form
    assert not [n for _, _, n in on_gpu if n.startswith("_Z")]


def test_launches_flow_to_the_gpu_work_they_launched(decoded: Decoded) -> None:
    starts, ends = {}, {}
    for ts, _, event in decoded.events:
        for flow in event.flow_ids:
            starts[flow] = (ts, event.track_uuid)
        for flow in event.terminating_flow_ids:
            ends[flow] = (ts, event.track_uuid)
    assert starts.keys() == ends.keys() and len(starts) > 5000
    for flow, (ts, track) in starts.items():
        end_ts, end_track = ends[flow]
        assert ts <= end_ts  # a launch precedes its kernel
        assert decoded.tracks[track].HasField("thread")
        assert decoded.tracks[end_track].name.startswith("stream ")


def test_counters_carry_units_and_every_sample(decoded: Decoded) -> None:
    counters = {u: d for u, d in decoded.tracks.items() if d.HasField("counter")}
    by_name = {d.name: d for d in counters.values()}
    assert by_name["memory used (bytes)"].counter.unit == pb.CounterDescriptor.UNIT_SIZE_BYTES
    assert by_name["power W"].counter.unit_name == "W"
    util = [
        e.double_counter_value
        for _, _, e in decoded.events
        if e.type == TrackEvent.TYPE_COUNTER
        and decoded.tracks[e.track_uuid].name == "GPU utilization %"
    ]
    with Recording(SLOW_LOADER) as rec:
        gpu = rec.read("gpu")
    assert util == [float(v) for v in gpu["util_gpu"].tolist()]
