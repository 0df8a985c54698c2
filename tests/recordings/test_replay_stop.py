"""A replay stopped while its poll reads (the app quitting mid-seek, its poll on a worker
thread): the stop waits for the read instead of closing the file under it, which crashed
the process (SIGSEGV in the reader's decode, in a CI run), and polls after it are empty."""

from __future__ import annotations

import threading
from pathlib import Path

from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource

DECODE_EAGER = Path(__file__).parents[2] / "recordings" / "decode-eager.gtop"
"""Real H100 recording, ~1 M kernel and API rows: a seek's history read takes a while."""


def _poll_into(source: ReplaySource, got: list) -> None:
    got.append(source.poll())


def test_stop_during_a_poll_waits_for_it_and_later_polls_are_empty() -> None:
    for _ in range(5):
        source = ReplaySource(Recording(DECODE_EAGER))
        source.seek(source.t_end)  # the next poll reads the last 120 s
        got: list = []
        reader = threading.Thread(target=_poll_into, args=(source, got))
        reader.start()
        source.stop()  # at once: most often while the poll is decoding
        reader.join(60)
        assert not reader.is_alive()
        (update,) = got
        assert update.reset or not update.batches  # it read whole, or not at all
        after = source.poll()
        assert not after.batches and not after.entities
