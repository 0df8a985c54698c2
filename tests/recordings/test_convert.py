"""Format 1 → 2: a real format 1 recording still reads, and converting it loses nothing;
every committed recording is in the current format."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gtop.recordings.convert import convert
from gtop.recordings.reader import Recording
from gtop.recordings.schema import FORMAT_VERSION

ROOT = Path(__file__).parents[2]
V1 = Path(__file__).parent / "fixtures" / "ddp-node0-cpu.v1.gtop"
"""``recordings/ddp-node0-cpu.gtop`` as it was committed in format 1."""
COMMITTED = sorted(
    [*(ROOT / "recordings").rglob("*.gtop"), *(ROOT / "gtop" / "demo").glob("*.gtop")]
)


def assert_same(a: Recording, b: Recording) -> None:
    """Everything a reader sees of ``a`` is in ``b``: metadata, layouts, every chunk's
    rows bit for bit, every entity, the time range, the problems."""
    skip = {"format_version", "converted_from"}
    assert {k: v for k, v in a.meta.items() if k not in skip} == {
        k: v for k, v in b.meta.items() if k not in skip
    }
    assert a.streams == b.streams
    for stream in a.streams:
        old, new = list(a.iter_chunks(stream)), list(b.iter_chunks(stream))
        assert [len(c) for c in old] == [len(c) for c in new], stream
        assert all(x.tobytes() == y.tobytes() for x, y in zip(old, new)), stream
        assert a.read(stream).tobytes() == b.read(stream).tobytes(), stream
    assert a.entities() == b.entities()
    assert a.time_range() == b.time_range()
    assert a.problems == b.problems == []


def test_format_1_still_reads() -> None:
    with Recording(V1) as rec:
        assert rec.version == 1 and rec.problems == []
        assert len(rec.read("thread_state")) > 1000
        stacks = rec.entities("stack")
        assert stacks and all(len(s.value["frames"]) == len(s.value["kinds"]) for s in stacks)


def test_conversion_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "v2.gtop"
    assert convert(V1, out) == []
    with Recording(V1) as old, Recording(out) as new:
        assert new.version == FORMAT_VERSION and new.meta["converted_from"] == 1
        assert_same(old, new)
    assert out.stat().st_size < V1.stat().st_size


def test_converting_a_current_recording_changes_nothing(tmp_path: Path) -> None:
    src = ROOT / "recordings" / "fixes" / "preprocess-gpu.gtop"
    convert(src, tmp_path / "again.gtop")
    with Recording(src) as old, Recording(tmp_path / "again.gtop") as new:
        assert_same(old, new)
        assert np.array_equal(old.read("kernel")["end_ns"], new.read("kernel")["end_ns"])


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_recordings_are_current(path: Path) -> None:
    with Recording(path) as rec:
        assert rec.version == FORMAT_VERSION
