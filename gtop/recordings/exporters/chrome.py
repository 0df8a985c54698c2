"""Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev's JSON importer).

Every track: GPU streams (one process per GPU), CUDA API calls and NVTX ranges on their
threads, thread states on a row beside each thread, the spans kernel sampling left
untraced (a row per process), counters. For large recordings
``--format perfetto`` is smaller and faster to load.
"""

from __future__ import annotations

from gtop.recordings.exporters import trace_json
from gtop.recordings.exporters import tracks as tk
from gtop.recordings.exporters.output import Output
from gtop.recordings.reader import Recording

BYTES_PER_ROW = 150

STATE_TID_OFFSET = 1 << 22
"""A thread's state row is a lane of its own: its tid plus this (above any real tid)."""


def _lane(track: tk.Track) -> tuple[int, int]:
    return track.pid, track.tid + STATE_TID_OFFSET if track.kind == "state" else track.tid


FLAVOUR = trace_json.Flavour(
    lane=_lane, families=("gpu", "host", "state", "untraced"), counters=True, relative=True
)


def export(rec: Recording, out: Output) -> str:
    return trace_json.write(rec, out, FLAVOUR)
