"""A recording holds only its own time: rows that ended before it began (an agent
attached again can hand over an earlier session's records) and rows that start after its
end are not written. The rows are a committed H200 recording's kernels, some incomplete
as CUPTI returns in-flight records (no end time: ``end_ns`` -1), republished live."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gtop.core.hub import Hub
from gtop.recordings.reader import Recording
from gtop.recordings.recorder import Recorder

DECODE = Path(__file__).resolve().parents[2] / "recordings" / "fixes" / "decode-eager.gtop"


def test_rows_outside_the_recording_are_not_written(tmp_path: Path) -> None:
    with Recording(DECODE) as rec:
        kernels = rec.read("kernel")[:3000]
    kernels["end_ns"][1::7] = -1  # some came back in flight
    since = int(kernels["t_ns"][1000])
    until = int(kernels["t_ns"][2500])
    hub = Hub()
    recorder = Recorder(hub, tmp_path / "r.gtop", {"host": "test"}, since_ns=since).start()
    hub.publish("kernel", kernels)
    recorder.until_ns = until
    recorder.stop()
    with Recording(tmp_path / "r.gtop") as out:
        got = out.read("kernel")
    ends = np.maximum(kernels["end_ns"], kernels["t_ns"])
    want = kernels[(ends >= since) & (kernels["t_ns"] <= until)]
    assert 1400 < len(got) < 1600
    assert np.array_equal(got["correlation"], want["correlation"])
    assert (got["end_ns"] == -1).sum() == (want["end_ns"] == -1).sum() > 0
