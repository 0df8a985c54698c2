"""Perfetto TrackEvent protobuf (ui.perfetto.dev, trace_processor).

One packet sequence with incremental state: event names and debug-annotation names are
interned (sent once, then referred to by id); processes and threads have their own track
descriptors (GPUs are processes, their streams child tracks); a CUDA API call that
launched GPU work starts a flow that the kernel, copy or memset ends; counters carry
their unit. Each track's begin/end events are written in the order trace_processor pairs
them (time, then file order): at one instant, ends before begins, outer slices before
inner ones.

Field numbers are from perfetto/protos/perfetto/trace/ (tests decode the output with the
``perfetto`` package's own ``perfetto_trace_pb2``).
"""

from __future__ import annotations

import numpy as np

from gtop.recordings.exporters import protowire as pw
from gtop.recordings.exporters import tracks as tk
from gtop.recordings.exporters.output import Output
from gtop.recordings.exporters.window import covered
from gtop.recordings.reader import Recording

BYTES_PER_ROW = 52

SEQUENCE_ID = 0x67  # "g": any id from 2 to 127 is one byte per packet (1 is the service's)
BATCH = 1 << 18
"""Events encoded per numpy batch (bounds the encoder's memory)."""

# TracePacket
P_TIMESTAMP, P_SEQUENCE_ID, P_TRACK_EVENT, P_INTERNED, P_FLAGS, P_DESCRIPTOR = 8, 10, 11, 12, 13, 60
SEQ_CLEARED, SEQ_NEEDS = 1, 2
# TrackEvent
E_ANNOTATION, E_TYPE, E_NAME_IID, E_TRACK, E_COUNTER, E_FLOW, E_END_FLOW = 4, 9, 10, 11, 44, 47, 48
SLICE_BEGIN, SLICE_END, COUNTER = 1, 2, 4
# DebugAnnotation
A_NAME_IID, A_INT, A_STRING = 1, 4, 6
# TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor
D_UUID, D_NAME, D_PROCESS, D_THREAD, D_PARENT, D_COUNTER = 1, 2, 3, 4, 5, 8
UNIT_SIZE_BYTES = 3
# InternedData
I_EVENT_NAMES, I_ANNOTATION_NAMES = 2, 3

PROCESS_UUID = 1 << 48
"""Process tracks' uuids: this plus the pid (other tracks: their index plus one)."""

ANNOTATIONS = ("correlation", "grid", "block", "registers", "shared_memory_B", "bytes")
"""Debug annotations on GPU slices (interned names, iid = position + 1)."""


def _packet(body: bytes) -> bytes:
    return pw.field_bytes(1, pw.field_varint(P_SEQUENCE_ID, SEQUENCE_ID) + body)


def _interned(field: int, strings: list[str], first_iid: int) -> bytes:
    return b"".join(
        pw.field_bytes(field, pw.field_varint(1, first_iid + i) + pw.field_bytes(2, s))
        for i, s in enumerate(strings)
    )


class _Writer:
    def __init__(self, out: Output, tracks: tk.Tracks, names: tk.Names) -> None:
        self.f = out.stream(binary=True)
        self.out, self.tracks, self.names = out, tracks, names
        self.described = 0
        self.interned = 0
        self.processes: set[int] = set()
        self.packets = 0
        head = pw.field_varint(P_FLAGS, SEQ_CLEARED)
        head += pw.field_bytes(P_INTERNED, _interned(I_ANNOTATION_NAMES, list(ANNOTATIONS), 1))
        self.write(_packet(head))

    def write(self, data: bytes, packets: int = 1) -> None:
        self.f.write(data)
        self.packets += packets

    def descriptor(self, body: bytes) -> None:
        self.write(_packet(pw.field_bytes(P_DESCRIPTOR, body)))

    def process(self, pid: int) -> int:
        uuid = PROCESS_UUID + pid
        if pid not in self.processes:
            self.processes.add(pid)
            desc = pw.field_varint(1, pid) + pw.field_bytes(6, self.tracks.process_name(pid))
            desc += b"".join(pw.field_bytes(2, arg) for arg in self.tracks.cmdline(pid))
            self.descriptor(pw.field_varint(D_UUID, uuid) + pw.field_bytes(D_PROCESS, desc))
        return uuid

    def describe_new(self) -> None:
        """Descriptors for tracks made since the last call, and names for new strings."""
        while self.described < len(self.tracks.all):
            track = self.tracks.all[self.described]
            self.described += 1
            body = pw.field_varint(D_UUID, track.index + 1)
            if track.kind == "thread":
                thread = pw.field_varint(1, track.pid) + pw.field_varint(2, track.tid)
                thread += pw.field_bytes(5, track.name)
                self.process(track.pid)
                body += pw.field_bytes(D_THREAD, thread)
            elif track.kind == "state":
                parent = self.tracks.get("thread", track.pid, track.tid)
                body += pw.field_bytes(D_NAME, "thread state")
                body += pw.field_varint(D_PARENT, parent.index + 1)
            else:
                body += pw.field_bytes(D_NAME, track.name)
                body += pw.field_varint(D_PARENT, self.process(track.pid))
                if track.kind == "counter":
                    unit = (
                        pw.field_varint(3, UNIT_SIZE_BYTES)
                        if track.unit == "B"
                        else pw.field_bytes(6, track.unit)
                    )
                    body += pw.field_bytes(D_COUNTER, unit)
            self.descriptor(body)
        if self.interned < len(self.names.strings):
            new = self.names.strings[self.interned :]
            body = pw.field_bytes(P_INTERNED, _interned(I_EVENT_NAMES, new, self.interned + 1))
            self.write(_packet(pw.field_varint(P_FLAGS, SEQ_NEEDS) + body))
            self.interned = len(self.names.strings)

    def events(self, batch: pw.Batch, times: np.ndarray) -> None:
        packets = pw.Batch(len(times))
        packets.varint(P_TIMESTAMP, times)
        packets.raw(
            pw.field_varint(P_SEQUENCE_ID, SEQUENCE_ID) + pw.field_varint(P_FLAGS, SEQ_NEEDS)
        )
        packets.message(P_TRACK_EVENT, batch)
        trace = pw.Batch(len(times))
        trace.message(1, packets)
        self.write(trace.tobytes(), len(times))


def event_order(table: tk.SliceTable) -> tuple[np.ndarray, np.ndarray]:
    """The slices' begin and end events in write order: per track by time; at one instant,
    ends of earlier slices first, then zero-length slices (begin, end), then begins,
    outer before inner. Returns (row of each event, True where it is a begin)."""
    n = len(table)
    rows = np.concatenate([np.arange(n), np.arange(n)])
    begin = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    times = np.concatenate([table.start, table.end])
    zero = np.tile(table.end == table.start, 2)
    rank = np.where(zero, np.where(begin, 1, 2), np.where(begin, 3, 0))
    inner = np.where(begin & ~zero, -np.tile(table.end, 2), 0)
    order = np.lexsort((rows, inner, rank, times, np.tile(table.track, 2)))
    return rows[order], begin[order]


def _grid_strings(table: tk.SliceTable, axis: str) -> np.ndarray:
    dims = np.stack([table.args[f"{axis}_{a}"] for a in "xyz"], axis=1)
    uniq, inverse = np.unique(dims, axis=0, return_inverse=True)
    text = np.array([f"{x}x{y}x{z}".encode() for x, y, z in uniq.tolist()], dtype="S")
    return text[inverse.ravel()]


def _annotate(
    event: pw.Batch,
    table: tk.SliceTable,
    rows: np.ndarray,
    begin: np.ndarray,
    texts: dict[str, np.ndarray],
) -> None:
    """Debug annotations on the begin events of GPU slices (``texts``: the grid and
    block of every slice, as text)."""
    for iid, name in enumerate(ANNOTATIONS, start=1):
        if name in texts:
            values = texts[name][rows]
            has = begin & (table.args[f"{name}_x"][rows] >= 0)
        else:
            if name not in table.args:
                continue
            values = table.args[name][rows]
            has = begin & (values >= 0)
        if not has.any():
            continue
        note = pw.Batch(len(rows))
        note.varint(A_NAME_IID, np.full(len(rows), iid))
        if values.dtype.kind == "S":
            note.strings(A_STRING, values)
        else:
            note.varint(A_INT, values)
        event.message(E_ANNOTATION, note, where=has)


def _slices(w: _Writer, table: tk.SliceTable, linked: np.ndarray) -> None:
    order, begins = event_order(table)
    flows = np.isin(table.flow, linked, kind="sort") if len(linked) else np.zeros(len(table), bool)
    host = table.category >= tk.RUNTIME
    texts = {n: _grid_strings(table, n) for n in ("grid", "block") if f"{n}_x" in table.args}
    for lo in range(0, len(order), BATCH):
        rows, begin = order[lo : lo + BATCH], begins[lo : lo + BATCH]
        times = np.where(begin, table.start[rows], table.end[rows])
        event = pw.Batch(len(rows))
        event.varint(E_TYPE, np.where(begin, SLICE_BEGIN, SLICE_END))
        event.varint(E_TRACK, table.track[rows].astype(np.int64) + 1)
        event.varint(E_NAME_IID, table.name[rows].astype(np.int64) + 1, where=begin)
        flow = begin & flows[rows]
        event.fixed64(E_FLOW, table.flow[rows], where=flow & host[rows])
        event.fixed64(E_END_FLOW, table.flow[rows], where=flow & ~host[rows])
        _annotate(event, table, rows, begin, texts)
        w.events(event, times)
        w.out.advance(len(rows) // 2)


def export(rec: Recording, out: Output) -> str:
    tracks, names = tk.Tracks(rec), tk.Names()
    w = _Writer(out, tracks, names)
    linked = tk.linked_flows(rec)
    slices = clipped = values = 0
    for table in tk.slice_tables(rec, tracks, names):
        if table.category[0] == tk.STATE:
            for t in tk.distinct(table.track).tolist():
                track = tracks.all[t]
                tracks.get("thread", track.pid, track.tid)
        w.describe_new()
        _slices(w, table, linked)
        slices, clipped = slices + len(table), clipped + table.clipped
    for series in tk.counters(rec, tracks):
        w.describe_new()
        n = len(series.times)
        event = pw.Batch(n)
        event.varint(E_TYPE, np.full(n, COUNTER))
        event.varint(E_TRACK, np.full(n, series.track.index + 1))
        event.double(E_COUNTER, series.values)
        w.events(event, series.times)
        values += n
    note = f" ({clipped} overlapping slices cut to nest)" if clipped else ""
    return (
        f"wrote {w.packets} packets: {slices} slices, {len(linked)} launch flows, "
        f"{values} counter values on {len(tracks.all)} tracks{note}, {covered(rec).label()}"
    )
