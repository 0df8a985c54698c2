"""Exporters over a real recording."""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path

from gtop.cli import main
from gtop.recordings.reader import Recording


def parse_message(data: bytes) -> list[tuple[int, int, object]]:
    """A protobuf message as (field, wire type, value) triples (varint, fixed64, bytes)."""
    out, i = [], 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            out.append((number, wire, varint()))
        elif wire == 1:
            out.append((number, wire, struct.unpack_from("<d", data, i)[0]))
            i += 8
        elif wire == 2:
            n = varint()
            out.append((number, wire, data[i : i + n]))
            i += n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
    return out


def test_perfetto_export_is_valid_track_event_protobuf(
    idle_busy_idle: Path, tmp_path: Path
) -> None:
    out = tmp_path / "t.perfetto-trace"
    assert main(["export", str(idle_busy_idle), "--format", "perfetto", "-o", str(out)]) == 0
    packets = [p for f, _, p in parse_message(out.read_bytes()) if f == 1]
    names, counter_values = {}, []
    for packet in packets:
        fields = {f: v for f, _, v in parse_message(packet)}
        assert fields[10] == 0x67746F70  # trusted_packet_sequence_id
        if 60 in fields:
            desc = {f: v for f, _, v in parse_message(fields[60])}
            if 2 in desc:
                names[desc[1]] = desc[2].decode()
        else:
            event = {f: v for f, _, v in parse_message(fields[11])}
            assert event[11] in names  # every event's track was described before it
            if event[9] == 4:
                counter_values.append((names[event[11]], event[44]))
    util = [v for name, v in counter_values if name == "utilization %"]
    with Recording(idle_busy_idle) as rec:
        gpu = rec.read("gpu")
    assert len(util) == len(gpu)
    assert max(util) == float(gpu["util_gpu"].max())


def test_chrome_export_is_loadable_json(idle_busy_idle: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    assert main(["export", str(idle_busy_idle), "--format", "chrome", "-o", str(out)]) == 0
    trace = json.loads(out.read_text())
    events = trace["traceEvents"]
    processes = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert "GPU 0" in processes
    counters = [e for e in events if e["ph"] == "C" and e["name"] == "utilization %"]
    assert counters and all(e["ts"] >= 0 for e in counters)


def test_csv_export_has_every_row(train_loop: Path, tmp_path: Path) -> None:
    out = tmp_path / "csv"
    assert main(["export", str(train_loop), "--format", "csv", "-o", str(out)]) == 0
    with Recording(train_loop) as rec:
        for name in rec.streams:
            with open(out / f"{name}.csv") as f:
                rows = list(csv.reader(f))
            assert rows[0] == list(rec.streams[name].names)
            assert len(rows) - 1 == len(rec.read(name))
