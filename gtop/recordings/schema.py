"""The ``.gtop`` file format, declared once.

A recording is one SQLite database:

``meta(key, value)``
    JSON values: ``format`` (always ``"gtop-recording"``), ``format_version``,
    ``gtop_version``, ``created_unix``, ``host``, ``target`` (pid/command line or null),
    ``clock`` (the CLOCK_MONOTONIC→wall-clock offset), ``devices`` (a snapshot),
    ``driver_version``, ``cuda_version``, ``interval_s``, ``t_start_ns``, ``t_end_ns``
    and, when the recording was finalised, ``drops`` and ``closed``.
``streams(name, dtype, doc)``
    One row per stream: its numpy dtype as JSON (``np.lib.format.descr_to_dtype`` form),
    so any reader can decode streams whose producers it does not know.
``chunks(id, stream, t_first, t_last, n, crc, data)``
    Column chunks made by :mod:`gtop.recordings.codec`, indexed by stream and time.
``entity_chunks(id, base, n, crc, data)``
    Descriptive facts (process command lines, GPU names, kernel names, stacks), each
    valid from its ``t_ns`` on, in compressed batches whose strings are interned (see
    :mod:`gtop.recordings.entity_chunks`).

Format 1 (still read) stored each entity as one JSON row of ``entities(id, kind, key,
t_ns, value)``, and delta-encoded chunk columns by a fixed rule (see
:mod:`gtop.recordings.codec`).

Writers commit at least every second, in WAL mode, so a writer killed with SIGKILL
leaves a file that reads back up to its last commit.
"""

from __future__ import annotations

import json

import numpy as np

FORMAT_NAME = "gtop-recording"
FORMAT_VERSION = 2
MAX_CHUNK_ROWS = 1 << 16
"""Rows per chunk at most: writers split bigger batches, readers refuse bigger chunks."""

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS streams (name TEXT PRIMARY KEY, dtype TEXT NOT NULL, doc TEXT);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    stream TEXT NOT NULL,
    t_first INTEGER NOT NULL,
    t_last INTEGER NOT NULL,
    n INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks (stream, t_first);
CREATE TABLE IF NOT EXISTS entity_chunks (
    id INTEGER PRIMARY KEY,
    base INTEGER NOT NULL,
    n INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    data BLOB NOT NULL
);
"""


def dtype_to_json(dtype: np.dtype) -> str:
    return json.dumps(np.lib.format.dtype_to_descr(dtype))


def dtype_from_json(text: str) -> np.dtype:
    descr = json.loads(text)
    if isinstance(descr, list):
        descr = [tuple(field) for field in descr]
    return np.lib.format.descr_to_dtype(descr)
