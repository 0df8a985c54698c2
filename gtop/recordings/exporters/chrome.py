"""Chrome trace-event JSON (chrome://tracing, Perfetto UI's legacy importer).

Written as a stream of events, so memory stays flat; for large recordings prefer
``--format perfetto`` (smaller and faster to load).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from gtop.recordings.exporters import tracks
from gtop.recordings.reader import Recording

FORMAT = "chrome"
DESCRIPTION = "Chrome trace-event JSON"


class _EventWriter:
    def __init__(self, out: TextIO, t0: int) -> None:
        self.out, self.t0, self.count = out, t0, 0
        self.named: set[tuple[int, int]] = set()

    def write(self, event: dict[str, Any]) -> None:
        self.out.write(",\n" if self.count else "")
        self.out.write(json.dumps(event, separators=(",", ":")))
        self.count += 1

    def name_track(self, track: tracks.Track) -> None:
        if (track.pid, -1) not in self.named:
            self.named.add((track.pid, -1))
            self.write(
                {"ph": "M", "name": "process_name", "pid": track.pid, "args": {"name": track.group}}
            )
        if not track.counter and (track.pid, track.tid) not in self.named:
            self.named.add((track.pid, track.tid))
            self.write(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": track.pid,
                    "tid": track.tid,
                    "args": {"name": track.name},
                }
            )

    def us(self, t_ns: int) -> float:
        return round((int(t_ns) - self.t0) / 1e3, 3)


def export(rec: Recording, out: Path) -> str:
    t0, _ = rec.time_range()
    with open(out, "w") as f:
        f.write('{"displayTimeUnit":"ns","traceEvents":[\n')
        w = _EventWriter(f, t0)
        for part in tracks.slices(rec):
            w.name_track(part.track)
            for start, end, label in zip(part.starts, part.ends, part.labels):
                w.write(
                    {
                        "ph": "X",
                        "name": label,
                        "pid": part.track.pid,
                        "tid": part.track.tid,
                        "ts": w.us(start),
                        "dur": round((int(end) - int(start)) / 1e3, 3),
                    }
                )
        for series in tracks.counters(rec):
            w.name_track(series.track)
            for t, value in zip(series.times, series.values):
                w.write(
                    {
                        "ph": "C",
                        "name": series.track.name,
                        "pid": series.track.pid,
                        "ts": w.us(t),
                        "args": {"value": float(value)},
                    }
                )
        f.write("\n]}\n")
    return f"wrote {w.count} trace events to {out}"
