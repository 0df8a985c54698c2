"""A live session that launches its target: what runs before the target, and what a
recording started just after the launch holds."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gtop.recordings.reader import Recording
from gtop.session.live import LiveSource


def test_a_recording_started_after_the_launch_holds_what_the_tracer_sent_before(
    tmp_path: Path,
) -> None:
    source = LiveSource(None, 0.1, require_gpu=False)
    try:
        source.launch([sys.executable, "-c", "import time; time.sleep(2)"], agent=False)
        time.sleep(1.5)  # the tracer publishes the target's first rows meanwhile
        started_ns = time.monotonic_ns()
        source.start_recording(tmp_path / "late.gtop")
        source.start()
        assert source.process is not None
        source.process.wait(30)
    finally:
        source.stop()
    with Recording(tmp_path / "late.gtop") as rec:
        rows = rec.read("thread_state")
    mine = rows[rows["pid"] == source.pid]
    # its start-up's intervals, over (and published) well before the recording began
    assert len(mine) and int(mine["end_ns"].min()) < started_ns - 1_000_000_000
