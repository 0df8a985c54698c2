"""Reading ``.gtop`` recordings, including damaged ones.

A damaged file (truncated copy, flipped bytes, a writer killed mid-transaction, rows no
recorder writes) is read row by row: every row that passes :mod:`validate` and every
chunk that decodes and passes its checksum is returned, everything else is skipped and
described in :attr:`Recording.problems` (:meth:`Recording.damage` sums it up in one
line). Only a file whose SQLite header or metadata cannot be read is refused, with
:class:`RecordingError`.
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter, OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from gtop.core.hub import Entity
from gtop.core.rows import concat_rows, take_rows
from gtop.recordings import codec, entity_chunks, validate
from gtop.recordings.schema import FORMAT_NAME, FORMAT_VERSION
from gtop.recordings.snapshot import open_readonly
from gtop.recordings.validate import ChunkInfo, Damaged

MAX_ID_PROBE_GAP = 4096
"""When the chunk index is damaged, stop probing chunk ids after this many misses."""
MAX_PROBLEMS = 100
"""Problems listed one by one; past this many only the count grows."""
MAX_META_ROWS = 10_000
MAX_CHUNKS = 4_000_000
"""Chunk index rows read (a day of recording has ~3.5M); more is no recording's index."""
TABLES = {
    "meta": ("key", "value"),
    "streams": ("name", "dtype"),
    "chunks": ("id", "stream", "t_first", "t_last", "n", "crc", "data"),
    "entities": ("id", "kind", "key", "t_ns", "value"),
    "entity_chunks": ("id", "base", "n", "crc", "data"),
}
"""The tables read, and the columns read from each."""
ENTITY_TABLES = ("entities", "entity_chunks")
"""Format 1's and format 2's entities: the one a recording has (none: no entities)."""


class RecordingError(Exception):
    """The file is missing or is not a readable gtop recording (message is one line)."""


class Recording:
    """An open recording.

    Raises:
        RecordingError: the file is missing, not SQLite, or not a gtop recording.
    """

    def __init__(self, path: str | os.PathLike[str], cache_chunks: int = 64) -> None:
        self.path = Path(path)
        try:
            is_file = self.path.is_file()
        except OSError as exc:  # a name too long for the file system, say
            raise RecordingError(f"{self.path}: {exc.strerror}") from None
        if not is_file:
            raise RecordingError(f"{self.path}: no such recording")
        self.problems: list[str] = []
        self.unlisted_problems = 0
        try:
            self._db = open_readonly(self.path)
        except OSError as exc:
            raise RecordingError(f"{self.path}: cannot read it ({exc.strerror or exc})") from None
        except sqlite3.DatabaseError as exc:
            raise RecordingError(f"{self.path}: not a readable gtop recording ({exc})") from exc
        try:
            # Lets SQLite open a truncated file (it would refuse when the header's page
            # count exceeds the file size); every chunk is still checked by its CRC.
            self._db.execute("PRAGMA writable_schema=ON")
            self._check_tables()
            rows = self._db.execute(f"SELECT key, value FROM meta LIMIT {MAX_META_ROWS}").fetchall()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise RecordingError(f"{self.path}: not a readable gtop recording ({exc})") from exc
        self.meta: dict[str, Any] = {}
        for key, value in rows:
            try:
                key, self.meta[key] = validate.check_meta(key, value)
            except Damaged as exc:
                self._problem(f"metadata {str(key)[:40]!r} damaged: {exc}")
        if self.meta.get("format") != FORMAT_NAME:
            raise RecordingError(f"{self.path}: not a gtop recording")
        version = self.meta.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise RecordingError(
                f"{self.path}: recording format {version} is newer than this gtop "
                f"understands ({FORMAT_VERSION}); upgrade gtop"
            )
        self.version = version
        self.decoded: Counter[str] = Counter()
        """Chunks decoded so far, by stream (a report decodes each chunk once)."""
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        self._cache_chunks = cache_chunks
        self._entities: list[Entity] | None = None
        self._opened: dict[int, np.ndarray] = {}
        """The chunks decoded to confirm the time range, kept for their first read (by then
        the cache may have dropped them: a report decodes each chunk once)."""
        self.streams = self._read_streams()
        plausible = validate.plausible_chunks(self._read_index(), self._data_bounds)
        for problem in plausible.problems:
            self._problem(problem)
        self._time_range = plausible.time_range
        self._opened = dict(self._cache)
        self._index: dict[str, list[ChunkInfo]] = {}
        for info in plausible.chunks:
            self._index.setdefault(info.stream, []).append(info)
        for chunks in self._index.values():
            chunks.sort(key=lambda c: (c.t_first, c.id))

    def _problem(self, text: str) -> None:
        """Note one problem (once; past :data:`MAX_PROBLEMS`, only counted)."""
        if text in self.problems:
            return
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.unlisted_problems += 1

    def damage(self) -> str | None:
        """What was lost, in one line (None for an intact recording)."""
        total = len(self.problems) + self.unlisted_problems
        if not total:
            return None
        more = f" (and {total - 1} more problems)" if total > 1 else ""
        return f"{self.path} is damaged; read what is intact: {self.problems[0]}{more}"

    # --- structure ----------------------------------------------------------------------

    def _check_tables(self) -> None:
        """Each table read is a plain table with the columns read from it: a view (a
        recursive one never ends) or a virtual table runs code of the file's choosing.

        Raises:
            RecordingError: one is not.
        """
        marks = ", ".join("?" * len(TABLES))
        found = dict(
            self._db.execute(
                f"SELECT name, sql FROM sqlite_master WHERE name IN ({marks})", tuple(TABLES)
            ).fetchall()
        )
        for name, columns in TABLES.items():
            if name in ENTITY_TABLES and name not in found:
                continue
            sql = found.get(name)
            if not isinstance(sql, str) or not sql.upper().startswith("CREATE TABLE"):
                raise RecordingError(f"{self.path}: not a gtop recording ({name} is not a table)")
            have = {row[1] for row in self._db.execute(f"PRAGMA table_info({name})")}
            missing = [c for c in columns if c not in have]
            if missing:
                raise RecordingError(
                    f"{self.path}: not a gtop recording ({name} has no column {missing[0]})"
                )

    def _read_streams(self) -> dict[str, np.dtype]:
        out = {}
        try:
            rows = self._db.execute("SELECT name, dtype FROM streams").fetchall()
        except sqlite3.DatabaseError as exc:
            self._problem(f"stream table unreadable: {exc}")
            return out
        for name, text in rows:
            try:
                name, out[name] = validate.check_layout(name, text)
            except Damaged as exc:
                self._problem(f"stream {str(name)[:40]!r} unreadable: {exc}")
        return out

    def _read_index(self) -> list[ChunkInfo]:
        sql = "SELECT id, stream, t_first, t_last, n, crc FROM chunks"
        try:
            rows = self._db.execute(f"{sql} LIMIT {MAX_CHUNKS + 1}").fetchall()
            if len(rows) > MAX_CHUNKS:
                self._problem(f"chunk index holds over {MAX_CHUNKS:,} rows; the rest left out")
                del rows[MAX_CHUNKS:]
        except sqlite3.DatabaseError as exc:
            self._problem(f"chunk index damaged ({exc}); probing chunks one by one")
            rows = self._probe_index(sql)
        index = []
        for row in rows:
            try:
                index.append(validate.check_index_row(row, self.streams))
            except Damaged as exc:
                self._problem(f"chunk {str(row[0])[:20]} left out: index row damaged ({exc})")
        return index

    def _probe_index(self, sql: str) -> list[tuple]:
        rows, misses, chunk_id = [], 0, 1
        while misses < MAX_ID_PROBE_GAP:
            try:
                row = self._db.execute(sql + " WHERE id = ?", (chunk_id,)).fetchone()
            except sqlite3.DatabaseError:
                row = None
            if row is None:
                misses += 1
            else:
                misses = 0
                rows.append(row)
            chunk_id += 1
        return rows

    def _data_bounds(self, info: ChunkInfo) -> tuple[int, int] | None:
        records = self._chunk(info)
        return None if records is None or not len(records) else validate.data_bounds(records)

    # --- data ---------------------------------------------------------------------------

    def chunks(self, stream: str) -> list[ChunkInfo]:
        return list(self._index.get(stream, []))

    def time_range(self) -> tuple[int, int]:
        """First and last timestamp in the recording (0, 0 if it holds no records), from
        checksummed data (see :func:`~gtop.recordings.validate.plausible_chunks`)."""
        return self._time_range

    def read(self, stream: str, t0: int | None = None, t1: int | None = None) -> np.ndarray:
        """Records of ``stream`` with ``t0 <= t_ns < t1`` (all if unbounded), by time.

        Damaged chunks are skipped (and listed in :attr:`problems`).
        """
        dtype = self.streams.get(stream)
        if dtype is None:
            return np.empty(0)
        if t0 is None and t1 is None:
            return self._read_all(stream, dtype)
        parts = []
        for info in self._index.get(stream, []):
            if t1 is not None and info.t_first >= t1:
                break
            if t0 is not None and info.t_last < t0:
                continue
            records = self._chunk(info)
            if records is None:
                continue
            times = records["t_ns"]
            keep = np.ones(len(records), dtype=bool)
            if t0 is not None:
                keep &= times >= t0
            if t1 is not None:
                keep &= times < t1
            # a chunk wholly kept joins as it is: the rows are copied once, by the concat
            parts.append(records if bool(keep.all()) else take_rows(records, keep))
        if not parts:
            return np.empty(0, dtype=dtype)
        return by_time(concat_rows(parts), len(parts))

    def _read_all(self, stream: str, dtype: np.dtype) -> np.ndarray:
        """Every intact record of ``stream``, by time: each chunk is decoded straight
        into its place in the result, or copied there from the cache (not cached: a whole
        stream would only flush the cache, and the fresh memory of a second copy is what
        a big read costs most)."""
        chunks = self._index.get(stream, [])
        out = np.empty(sum(info.n for info in chunks), dtype)
        filled = parts = 0
        for info in chunks:
            cached = self._kept(info)
            if cached is not None:  # placed already: its rows, and no more
                out[filled : filled + len(cached)] = cached
                filled += len(cached)
                parts += 1
            elif self._decode(info, out[filled : filled + info.n]) is not None:
                filled += info.n
                parts += 1
        return by_time(_placed(stream, out if filled == len(out) else out[:filled].copy()), parts)

    def iter_chunks(self, stream: str, reuse: bool = False) -> Iterator[np.ndarray]:
        """Each intact chunk of ``stream`` in time order (bounded memory for big streams).

        ``reuse``: decode every chunk not in the cache into one buffer, not caching it
        (for one pass over a whole stream); each array yielded is valid only until the
        next, and not to be written.
        """
        for _, rows in self.chunk_rows(stream, reuse):
            yield rows

    def chunk_rows(
        self, stream: str, reuse: bool = False, t1: int | None = None
    ) -> Iterator[tuple[ChunkInfo, np.ndarray]]:
        """:meth:`iter_chunks` with each chunk's index row; ``t1``: only the chunks that
        start before it."""
        chunks = [c for c in self._index.get(stream, []) if t1 is None or c.t_first < t1]
        if not chunks:
            return
        buffer = np.empty(max(info.n for info in chunks) if reuse else 0, self.streams[stream])
        for info in chunks:
            if reuse and info.id not in self._cache and info.id not in self._opened:
                rows = self._decode(info, buffer[: info.n])
                rows = None if rows is None else _placed(stream, rows)
            else:
                rows = self._chunk(info)
            if rows is not None and len(rows):
                yield info, rows

    def read_chunk(self, info: ChunkInfo) -> np.ndarray | None:
        """One chunk's records (read-only, cached), or None when it is damaged."""
        return self._chunk(info)

    def drop_cache(self) -> None:
        """Forget the decoded chunks kept for reuse (their memory); a later read of
        them decodes again."""
        self._cache.clear()
        self._opened.clear()

    def _kept(self, info: ChunkInfo) -> np.ndarray | None:
        """The chunk's records if decoded already: cached, or decoded at open."""
        opened = self._opened.pop(info.id, None)
        cached = self._cache.get(info.id)
        return opened if cached is None else cached

    def _chunk(self, info: ChunkInfo) -> np.ndarray | None:
        records = self._kept(info)
        if records is None:
            records = self._decode(info)
            if records is None:
                return None
            records = _placed(info.stream, records)
            records.flags.writeable = False
        self._cache[info.id] = records
        self._cache.move_to_end(info.id)
        if len(self._cache) > self._cache_chunks:
            self._cache.popitem(last=False)
        return records

    def _decode(self, info: ChunkInfo, out: np.ndarray | None = None) -> np.ndarray | None:
        """The chunk's records (into ``out`` when given), or None when it is damaged."""
        self.decoded[info.stream] += 1
        try:
            row = self._db.execute("SELECT data FROM chunks WHERE id = ?", (info.id,)).fetchone()
            if row is None or type(row[0]) is not bytes:
                raise codec.ChunkError("missing")
            dtype = self.streams[info.stream]
            return codec.decode(row[0], dtype, info.n, info.crc, out, self.version)
        except (sqlite3.DatabaseError, codec.ChunkError) as exc:
            self._problem(f"{info.stream} chunk {info.id} ({info.n} rows) lost: {exc}")
            return None

    def entities(self, kind: str | None = None) -> list[Entity]:
        """Entities in recorded order (all kinds, or one), skipping damaged rows. Decoded
        and validated once per open recording (an export asked 6-8 times); each call gets
        its own list of the same (not to be changed) entities."""
        if self._entities is None:
            self._entities = self._decode_entities()
        if kind is None:
            return list(self._entities)
        return [e for e in self._entities if e.kind == kind]

    def _decode_entities(self) -> list[Entity]:
        rows = self._entity_rows() if self.version < 2 else self._chunked_entities()
        out = []
        for k, key, t_ns, value in rows:
            try:
                out.append(validate.check_entity(k, key, t_ns, value))
            except Damaged as exc:
                self._problem(f"entity {str(k)[:40]}/{str(key)[:40]} left out: {exc}")
        return out

    def _entity_rows(self) -> list[tuple]:
        """Format 1: one table row per entity, its value as JSON text."""
        sql = "SELECT kind, key, t_ns, value FROM entities ORDER BY id"
        try:
            return self._db.execute(sql).fetchall()
        except sqlite3.DatabaseError as exc:
            self._problem(f"entity table damaged: {exc}")
            return []

    def _chunked_entities(self) -> list[tuple]:
        """Format 2: entity chunks, their interned strings restored."""
        sql = "SELECT id, base, n, crc, data FROM entity_chunks ORDER BY id"
        try:
            rows = self._db.execute(sql).fetchall()
        except sqlite3.DatabaseError as exc:
            self._problem(f"entity table damaged: {exc}")
            return []
        strings: dict[int, str] = {}
        out = []
        for chunk_id, *fields in rows:
            try:
                stored = entity_chunks.decode(entity_chunks.from_row(fields), strings)
            except codec.ChunkError as exc:
                self._problem(f"entity chunk {str(chunk_id)[:20]} lost: {exc}")
                continue
            for row in stored:
                try:
                    out.append(entity_chunks.restore(row, strings))
                except codec.ChunkError as exc:
                    name = "/".join(str(v)[:40] for v in row[:2]) if type(row) is list else "?"
                    self._problem(f"entity {name} left out: {exc}")
        return out

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


UNPLACED = ("kernel", "memcpy", "memset")
"""Streams whose rows can lack a start time (-1: CUPTI's 0). Recorders before d123f68
kept such rows (an agent attaching to running NCCL ranks got one), which put the
recording's start at -1 ns; they cannot be placed in time and are left out."""


def _placed(stream: str, records: np.ndarray) -> np.ndarray:
    if stream not in UNPLACED or not len(records):
        return records
    unknown = records["t_ns"] == -1
    return records[~unknown] if unknown.any() else records


def by_time(records: np.ndarray, parts: int) -> np.ndarray:
    """Records joined from ``parts`` chunks, stably sorted by ``t_ns`` when two or more
    chunks were joined out of order (one chunk is kept in its recorded order)."""
    times = records["t_ns"]
    if parts > 1 and not bool(np.all(times[1:] >= times[:-1])):
        return take_rows(records, np.argsort(times, kind="stable"))
    return records
