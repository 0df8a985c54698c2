"""A live session that launches its target: what runs before the target, and what a
recording started just after the launch holds."""

from __future__ import annotations

import os
import subprocess
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


def test_a_targets_session_names_its_gpus_or_why_none_before_it_starts() -> None:
    """NVML opens on a thread beside the launch; the metadata (what the UI's first
    screen and a recording read) waits for it rather than saying nothing."""
    source = LiveSource(os.getpid(), 0.1, require_gpu=False)
    try:
        meta = source.meta
        assert meta["nvml_error"] or meta["devices"]
    finally:
        source.stop()


def test_a_recording_ends_where_its_stop_began(tmp_path: Path) -> None:
    """What the collectors' last polls read after the stop began (switches, samples) is
    left out: a ``--duration S`` recording covers S seconds, not S plus gtop's stop."""
    busy = "import threading\nwhile True:\n    threading.Thread(target=sum, args=([1],)).start()"
    target = subprocess.Popen([sys.executable, "-c", busy])
    source = LiveSource(target.pid, 0.1, require_gpu=False)
    try:
        source.start_recording(tmp_path / "ends.gtop")
        source.start()
        time.sleep(1.5)
        stop_ns = time.monotonic_ns()
        source.stop()
    finally:
        target.kill()
        target.wait()
    with Recording(tmp_path / "ends.gtop") as rec:
        rows = rec.read("thread_state")
        assert len(rows)
        _, hi = rec.time_range()
    assert hi <= time.monotonic_ns() and stop_ns <= hi + 1_000_000_000  # data up to the stop
    assert hi < stop_ns + 50_000_000, (hi - stop_ns) / 1e9  # the stop began ≤ 50 ms later


def test_a_recording_ends_where_its_stop_began_while_collection_still_starts(
    tmp_path: Path,
) -> None:
    """Stopped while the collectors start (the host tier's BPF load): the host collector
    polls meanwhile, and what the recorder drains while the stop waits is cut too."""
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    source = LiveSource(target.pid, 0.1, require_gpu=False)
    try:
        source.start_recording(tmp_path / "early.gtop")
        source.start_in_background()
        stop_ns = time.monotonic_ns()
        starting = source._starting is not None and source._starting.is_alive()
        source.stop()
    finally:
        target.kill()
        target.wait()
    with Recording(tmp_path / "early.gtop") as rec:
        _, hi = rec.time_range()
    assert starting  # the stop began while collection still started (and waited for it)
    assert hi < stop_ns + 50_000_000, (hi - stop_ns) / 1e9
