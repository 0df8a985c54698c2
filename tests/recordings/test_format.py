"""Round trips through the codec and the file format, and reading damaged files."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gtop.core import layouts
from gtop.core.hub import Entity
from gtop.recordings import codec
from gtop.recordings.reader import Recording, RecordingError
from gtop.recordings.writer import RecordingWriter

FIELDS = st.sampled_from(["<i8", "<u4", "<i2", "<u1", "<f4", "<f8", "<u8", "<i4"])


@st.composite
def record_arrays(draw: st.DrawFn) -> np.ndarray:
    extra = draw(st.lists(FIELDS, max_size=5))
    names = ["t_ns", "end_ns"] + [f"f{i}" for i in range(len(extra))]
    dtype = np.dtype(list(zip(names, ["<i8", "<i8", *extra])))
    return draw(hnp.arrays(dtype, st.integers(0, 300)))


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (NaNs included)."""
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


@given(record_arrays(), st.sampled_from([codec.ZSTD_LEVEL, codec.ARCHIVE_LEVEL]))
def test_codec_round_trip_is_bit_exact(records: np.ndarray, level: int) -> None:
    blob, crc = codec.encode(records, level)
    assert same(codec.decode(blob, records.dtype, len(records), crc), records)


def test_codec_detects_corruption() -> None:
    rows = layouts.KERNEL.empty(1000)
    rows["t_ns"] = np.arange(1000) * 1000
    blob, crc = codec.encode(rows)
    with pytest.raises(codec.ChunkError):
        codec.decode(blob[: len(blob) // 2], rows.dtype, len(rows), crc)
    with pytest.raises(codec.ChunkError):
        codec.decode(blob, rows.dtype, len(rows), crc ^ 1)


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, np.ndarray]]:
    """Batches of two streams with increasing time, as producers publish them."""
    out, t = [], 1_000
    for _ in range(draw(st.integers(1, 12))):
        spec = draw(st.sampled_from([layouts.GPU, layouts.KERNEL]))
        n = draw(st.integers(1, 50))
        rows = spec.empty(n)
        rows["t_ns"] = t + np.cumsum(draw(hnp.arrays("<i8", n, elements=st.integers(0, 10**9))))
        t = int(rows["t_ns"][-1])
        if spec is layouts.KERNEL:
            rows["end_ns"] = rows["t_ns"] + 5
            rows["name_id"] = draw(hnp.arrays("<u4", n))
        else:
            rows["util_gpu"] = draw(hnp.arrays("<f4", n, elements=st.floats(0, 100, width=32)))
        out.append((spec.name, rows))
    return out


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sessions(), st.integers(1, 5))
def test_recording_round_trip(tmp_path: Path, batches: list, flush_every: int) -> None:
    path = tmp_path / "r.gtop"
    path.unlink(missing_ok=True)
    writer = RecordingWriter(path, {"host": "test"})
    for i, (name, rows) in enumerate(batches):
        writer.append(name, rows)
        writer.add_entity(Entity("kernel_name", str(i), int(rows["t_ns"][0]), {"name": f"k{i}"}))
        if i % flush_every == 0:
            writer.flush()
    writer.close()
    with Recording(path) as rec:
        assert rec.problems == []
        assert rec.meta["host"] == "test" and rec.meta["closed"] is True
        for name in ("gpu", "kernel"):
            expected = [rows for n, rows in batches if n == name]
            if expected:
                assert same(rec.read(name), np.concatenate(expected))
        assert [e.value["name"] for e in rec.entities("kernel_name")] == [
            f"k{i}" for i in range(len(batches))
        ]
        everything = np.concatenate([rows["t_ns"] for _, rows in batches])
        lo, hi = np.percentile(everything, [25, 75]).astype(np.int64)
        part = np.concatenate([rec.read(n, lo, hi)["t_ns"] for n in rec.streams])
        assert sorted(part) == sorted(everything[(everything >= lo) & (everything < hi)])


def test_missing_and_foreign_files_give_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no such recording"):
        Recording(tmp_path / "missing.gtop")
    junk = tmp_path / "junk.gtop"
    junk.write_bytes(os.urandom(8192))
    with pytest.raises(RecordingError, match="not a readable gtop recording"):
        Recording(junk)


def chunk_rows(path: Path) -> dict[int, np.ndarray]:
    with Recording(path) as rec:
        return {c.id: rec._chunk(c) for s in rec.streams for c in rec.chunks(s)}


def test_flipped_bytes_lose_only_the_damaged_chunk(idle_busy_idle: Path, tmp_path: Path) -> None:
    original = chunk_rows(idle_busy_idle)
    damaged = tmp_path / "damaged.gtop"
    shutil.copy(idle_busy_idle, damaged)
    with Recording(idle_busy_idle) as rec:
        victim = rec.chunks("gpu")[3]
        blob = rec._db.execute("SELECT data FROM chunks WHERE id=?", (victim.id,)).fetchone()[0]
    data = bytearray(damaged.read_bytes())
    offset = data.index(blob)
    data[offset + len(blob) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    recovered = chunk_rows(damaged)
    assert recovered[victim.id] is None
    for chunk_id, rows in original.items():
        if chunk_id != victim.id:
            assert same(recovered[chunk_id], rows)
    with Recording(damaged) as rec:
        rec.read("gpu")
        assert any(f"chunk {victim.id}" in p for p in rec.problems)


@pytest.fixture
def long_recording(idle_busy_idle: Path, tmp_path: Path) -> Path:
    """The real H200 samples written 200 times over (shifted in time), one flush each,
    so the file has hundreds of chunks spread over its length, as a long session does."""
    with Recording(idle_busy_idle) as rec:
        rows = rec.read("gpu")
        entities = rec.entities()
    path = tmp_path / "long.gtop"
    writer = RecordingWriter(path, {"host": "replicated"})
    for entity in entities:
        writer.add_entity(entity)
    span = int(rows["t_ns"][-1] - rows["t_ns"][0]) + 1
    for i in range(200):
        shifted = rows.copy()
        shifted["t_ns"] += i * span
        writer.append("gpu", shifted)
        writer.flush()
    writer.close()
    return path


@pytest.mark.parametrize("keep", [0.98, 0.9, 0.75, 0.5])
def test_truncated_file_yields_only_intact_rows(
    long_recording: Path, tmp_path: Path, keep: float
) -> None:
    original = chunk_rows(long_recording)
    cut = tmp_path / "cut.gtop"
    shutil.copy(long_recording, cut)
    os.truncate(cut, int(cut.stat().st_size * keep))
    recovered = chunk_rows(cut)
    intact = [cid for cid, rows in recovered.items() if rows is not None]
    # Chunks are laid out in time order, so roughly the kept fraction comes back.
    assert len(intact) >= 0.8 * keep * len(original) - 2
    for chunk_id in intact:
        assert same(recovered[chunk_id], original[chunk_id])
    with Recording(cut) as rec:
        assert rec.meta["host"] == "replicated"
        rec.read("gpu")
        assert rec.problems, "lost chunks must be reported"


def test_recording_without_header_is_refused(idle_busy_idle: Path, tmp_path: Path) -> None:
    cut = tmp_path / "stub.gtop"
    cut.write_bytes(idle_busy_idle.read_bytes()[:100])
    with pytest.raises(RecordingError):
        Recording(cut)


def test_entities_keep_every_field_and_share_strings_across_chunks(tmp_path: Path) -> None:
    """A stack with a field format 2 does not know (line numbers, say) reads back as it
    was written; frames are stored once, and a chunk lost takes with it the rows of
    later chunks that use its strings (named, not a traceback)."""
    path = tmp_path / "stacks.gtop"
    writer = RecordingWriter(path, {"host": "test"})
    stacks = [
        Entity(
            "stack",
            str(i),
            1_000 + i,
            {"frames": [f"f{i % 3}", "main (a.py)"], "kinds": "pp", "lines": [i, 12]},
        )
        for i in range(5)
    ]
    for i, entity in enumerate(stacks):
        writer.add_entity(entity)
        if i == 1:
            writer.flush()  # chunk 1: stacks 0-1, strings f0, f1, main (a.py)
    writer.close()
    with Recording(path) as rec:
        assert rec.entities("stack") == stacks and rec.problems == []
    with sqlite3.connect(path) as db:
        db.execute("UPDATE entity_chunks SET data = ? WHERE id = 1", (b"lost",))
    db.close()
    with Recording(path) as rec:
        assert rec.entities("stack") == []  # stacks 2-4 use "main (a.py)"
        assert any("entity chunk 1 lost" in p for p in rec.problems)
        assert any(p.startswith("entity stack/2 left out") and "lost" in p for p in rec.problems)
