"""Writing ``.gtop`` recordings (see :mod:`gtop.recordings.schema`)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gtop import __version__
from gtop.core.files import check_output_path, create_new
from gtop.core.hub import Entity
from gtop.recordings import codec, entity_chunks
from gtop.recordings.schema import (
    DDL,
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_CHUNK_ROWS,
    dtype_to_json,
)

FORMAT = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION}
"""What this writer writes, whatever metadata a caller passes (a copy of an older file's)."""
SIDE_FILES = ("", "-wal", "-shm")
"""The recording and the two files SQLite keeps beside it in WAL mode."""
CHUNK_ROWS = MAX_CHUNK_ROWS
"""Rows per chunk for busy streams: large enough for zstd, small enough to seek."""


LOW_SPACE_B = 1 << 20
"""Free space below which a failed write is put down to a full disk (SQLite says "disk
I/O error" when it cannot even map its ``-shm`` file)."""


def _free_bytes(folder: Path) -> int:
    try:
        st = os.statvfs(folder)
    except OSError:
        return LOW_SPACE_B
    return st.f_bavail * st.f_frsize


class WriteError(OSError):
    """The recording cannot be written (a full disk, a file removed): one line. What
    was committed before stays readable."""

    def __init__(self, path: Path, cause: sqlite3.Error) -> None:
        free = _free_bytes(path.parent)
        full = "full" in str(cause) or free < LOW_SPACE_B
        why = (
            str(cause)
            if free >= LOW_SPACE_B
            else f"{cause}; the disk is full ({free >> 10} KiB free)"
        )
        super().__init__(errno.ENOSPC if full else errno.EIO, why, str(path))

    def __str__(self) -> str:
        return f"cannot write {self.filename}: {self.strerror}"


class RecordingWriter:
    """Appends record batches and entities to a recording file.

    Rows are buffered per stream and written as chunks when a stream has
    :data:`CHUNK_ROWS` rows or when :meth:`flush` is called; every flush is one
    transaction. Callers flush at least once a second (the :class:`Recorder` does).
    Not thread-safe: one thread writes.

    ``archive``: compress for keeping (:data:`~gtop.recordings.codec.ARCHIVE_LEVEL`),
    as a rewrite does, not for a live recorder's pace.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is false.
        OSError: the file cannot be created (:class:`WriteError`: nor written; nothing
            is left behind then).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        meta: dict[str, Any],
        *,
        overwrite: bool = False,
        archive: bool = False,
    ) -> None:
        self.path = Path(path)
        self._level = codec.ARCHIVE_LEVEL if archive else codec.ZSTD_LEVEL
        self._entity_level = codec.ARCHIVE_LEVEL if archive else entity_chunks.LEVEL
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"{self.path} already exists")
        # SQLite opens FILE-wal and FILE-shm by name and would write through a link
        # planted there (in /tmp, as root): gtop makes all three itself, new, 0600.
        made: list[Path] = []
        try:
            for suffix in SIDE_FILES:
                side = Path(f"{self.path}{suffix}")
                if overwrite:
                    check_output_path(side)  # only a regular file is ever replaced
                    side.unlink(missing_ok=True)
                os.close(create_new(side, 0o600))
                made.append(side)
        except OSError:
            for side in made:
                side.unlink(missing_ok=True)
            raise
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(DDL)
        except sqlite3.Error as exc:  # a full disk, say: leave nothing behind
            with contextlib.suppress(NameError, sqlite3.Error):
                self._db.close()
            for side in made:
                side.unlink(missing_ok=True)
            raise WriteError(self.path, exc) from None
        self._pending: dict[str, list[np.ndarray]] = {}
        self._pending_rows: dict[str, int] = {}
        self._dtypes: dict[str, np.dtype] = {}
        self._entities: list[Entity] = []
        self._strings: dict[str, int] = {}
        self.rows_written: dict[str, int] = {}
        self.t_first: int | None = None
        self.t_last: int | None = None
        base = {
            "gtop_version": __version__,
            "created_unix": time.time(),
            "clock": {
                "domain": "CLOCK_MONOTONIC",
                "realtime_minus_monotonic_ns": time.time_ns() - time.monotonic_ns(),
                "boot_id": _boot_id(),
            },
        }
        self.closed = False
        try:
            self.set_meta({**base, **meta, **FORMAT})
        except WriteError:
            self.abandon()
            for side in made:
                side.unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction; a failure rolls it back and raises :class:`WriteError`."""
        try:
            self._db.execute("BEGIN")
            yield
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            raise WriteError(self.path, exc) from None

    def set_meta(self, items: dict[str, Any]) -> None:
        """Write or replace metadata keys (committed immediately)."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in items.items()],
            )

    def append(self, stream: str, batch: np.ndarray, doc: str = "") -> None:
        """Buffer a batch of ``stream``; writes a chunk if the stream has enough rows."""
        if not len(batch):
            return
        known = self._dtypes.get(stream)
        if known is None:
            with self._transaction():
                self._db.execute(
                    "INSERT OR IGNORE INTO streams (name, dtype, doc) VALUES (?, ?, ?)",
                    (stream, dtype_to_json(batch.dtype), doc),
                )
            self._dtypes[stream] = batch.dtype
        elif known != batch.dtype:
            raise TypeError(f"{stream}: layout changed during the recording")
        self._pending.setdefault(stream, []).append(batch)
        self._pending_rows[stream] = self._pending_rows.get(stream, 0) + len(batch)
        if self._pending_rows[stream] >= CHUNK_ROWS:
            self.flush(streams=[stream])

    def add_entity(self, entity: Entity) -> None:
        self._entities.append(entity)

    def flush(self, streams: list[str] | None = None) -> None:
        """Write buffered rows (all streams, or only ``streams``) in one transaction."""
        names = list(self._pending) if streams is None else streams
        rows = []
        for name in names:
            batches = self._pending.pop(name, [])
            self._pending_rows.pop(name, None)
            if not batches:
                continue
            records = batches[0] if len(batches) == 1 else np.concatenate(batches)
            for start in range(0, len(records), CHUNK_ROWS):
                rows.append(self._chunk_row(name, records[start : start + CHUNK_ROWS]))
        entities = self._entities if streams is None else []
        if not rows and not entities:
            return
        self._entities = [] if streams is None else self._entities
        strings = dict(self._strings)
        entity_rows = []
        for start in range(0, len(entities), entity_chunks.MAX_ROWS):
            chunk, new = entity_chunks.encode(
                entities[start : start + entity_chunks.MAX_ROWS], strings, self._entity_level
            )
            strings.update((text, chunk.base + i) for i, text in enumerate(new))
            entity_rows.append((chunk.base, chunk.n, chunk.crc, chunk.data))
        with self._transaction():
            self._db.executemany(
                "INSERT INTO chunks (stream, t_first, t_last, n, crc, data) VALUES (?,?,?,?,?,?)",
                rows,
            )
            self._db.executemany(
                "INSERT INTO entity_chunks (base, n, crc, data) VALUES (?, ?, ?, ?)",
                entity_rows,
            )
        self._strings = strings  # committed: later chunks use these ids
        for stream, t_first, t_last, n, _, _ in rows:  # committed: count them
            self.t_first = t_first if self.t_first is None else min(self.t_first, t_first)
            self.t_last = t_last if self.t_last is None else max(self.t_last, t_last)
            self.rows_written[stream] = self.rows_written.get(stream, 0) + n

    def checkpoint(self) -> None:
        """Copy committed transactions from the WAL into the file itself, so that the
        file alone (copied without its ``-wal``) holds them."""
        try:
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:
            raise WriteError(self.path, exc) from None

    def _chunk_row(self, stream: str, records: np.ndarray) -> tuple:
        times = records["t_ns"]
        t_first, t_last = int(times.min()), int(times.max())
        if "end_ns" in (records.dtype.names or ()):
            t_last = max(t_last, int(records["end_ns"].max()))
        blob, crc = codec.encode(records, self._level)
        return stream, t_first, t_last, len(records), crc, blob

    def close(self, final_meta: dict[str, Any] | None = None) -> None:
        """Flush, store the final metadata, and fold the WAL back into the single file.

        Raises:
            WriteError: that failed; the file keeps what was committed before.
        """
        if self.closed:
            return
        try:
            self.flush()
            meta = {
                "t_start_ns": self.t_first,
                "t_end_ns": self.t_last,
                "closed": True,
                "rows": self.rows_written,
            }
            self.set_meta({**meta, **(final_meta or {}), **FORMAT})
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("PRAGMA journal_mode=DELETE")
        except sqlite3.Error as exc:  # committed data stays in the WAL, read from there
            self.abandon()
            raise WriteError(self.path, exc) from None
        except WriteError:
            self.abandon()
            raise
        self._db.close()
        self.closed = True

    def abandon(self) -> None:
        """Stop writing, keeping what was committed (after a :class:`WriteError`)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self.closed = True


def _boot_id() -> str | None:
    """This boot's id: recordings with the same one share CLOCK_MONOTONIC exactly."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip() or None
    except OSError:
        return None
