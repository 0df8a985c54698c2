"""Perfetto TrackEvent protobuf (open in ui.perfetto.dev or trace_processor).

Encodes the few messages needed by hand (protobuf wire format): ``Trace.packet`` (1) →
``TracePacket`` {timestamp 8, trusted_packet_sequence_id 10, track_event 11,
track_descriptor 60} → ``TrackDescriptor`` {uuid 1, name 2, process 3, parent_uuid 5,
counter 8} / ``TrackEvent`` {type 9, track_uuid 11, name 23, double_counter_value 44}.
Field numbers are from perfetto/protos/perfetto/trace/.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from gtop.recordings.exporters import tracks
from gtop.recordings.reader import Recording

FORMAT = "perfetto"
DESCRIPTION = "Perfetto TrackEvent protobuf (.perfetto-trace)"

SEQUENCE_ID = 0x67746F70  # "gtop"
SLICE_BEGIN, SLICE_END, COUNTER = 1, 2, 4


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_double(number: int, value: float) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<d", value)


class _PacketWriter:
    def __init__(self, out: BinaryIO) -> None:
        self.out, self.count = out, 0
        self.uuids: dict[tuple[str, str] | str, int] = {}

    def packet(self, body: bytes) -> None:
        self.out.write(field_bytes(1, field_varint(10, SEQUENCE_ID) + body))
        self.count += 1

    def _uuid(self, key: tuple[str, str] | str) -> tuple[int, bool]:
        known = key in self.uuids
        if not known:
            self.uuids[key] = len(self.uuids) + 1
        return self.uuids[key], not known

    def track(self, track: tracks.Track) -> int:
        group, new_group = self._uuid(track.group)
        if new_group:
            process = field_varint(1, track.pid) + field_bytes(6, track.group.encode())
            self.packet(field_bytes(60, field_varint(1, group) + field_bytes(3, process)))
        uuid, new = self._uuid((track.group, track.name))
        if new:
            desc = field_varint(1, uuid) + field_bytes(2, track.name.encode())
            desc += field_varint(5, group)
            if track.counter:
                desc += field_bytes(8, b"")
            self.packet(field_bytes(60, desc))
        return uuid

    def event(
        self, t_ns: int, uuid: int, kind: int, name: str | None = None, value: float | None = None
    ) -> None:
        body = field_varint(9, kind) + field_varint(11, uuid)
        if name is not None:
            body += field_bytes(23, name.encode())
        if value is not None:
            body += field_double(44, value)
        self.packet(field_varint(8, int(t_ns)) + field_bytes(11, body))


def export(rec: Recording, out: Path) -> str:
    with open(out, "wb") as f:
        w = _PacketWriter(f)
        for part in tracks.slices(rec):
            uuid = w.track(part.track)
            for start, end, label in zip(part.starts, part.ends, part.labels):
                w.event(start, uuid, SLICE_BEGIN, name=label)
                w.event(end, uuid, SLICE_END)
        for series in tracks.counters(rec):
            uuid = w.track(series.track)
            for t, value in zip(series.times, series.values):
                w.event(t, uuid, COUNTER, value=float(value))
    return f"wrote {w.count} packets on {len(w.uuids)} tracks to {out}"
