"""Rewriting a recording in the current format (``tools/convert_recordings.py``).

Every intact chunk is written again as one chunk of the same rows, in the same order
(so a reader joins and sorts them as before), every entity in its recorded order, and
the metadata as it was, plus ``converted_from`` (the old format version), compressed
for keeping (the writer's ``archive``). Nothing is re-recorded: what any reader of the
old file saw, it sees in the new one.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np

from gtop.recordings.reader import Recording
from gtop.recordings.writer import RecordingWriter

PAGE_SIZE = 1024
"""SQLite page of a converted file: most chunks are small, and a page left part empty
after each costs less (a fifth of a small recording) than with the default 4 KiB."""


def convert(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> list[str]:
    """Write ``src`` to the new file ``dst`` in the current format, compacted.

    Returns:
        The problems reading ``src`` (:attr:`Recording.problems`): what a damaged file
        lost is not in ``dst`` either.

    Raises:
        RecordingError: ``src`` is not a readable recording.
        FileExistsError: ``dst`` exists.
    """
    with Recording(src) as rec:
        meta = {**rec.meta, "converted_from": rec.meta.get("format_version")}
        copy_into(rec, dst, meta)
        problems = list(rec.problems)
    vacuum(dst, PAGE_SIZE)
    return problems


def copy_into(
    rec: Recording,
    dst: str | os.PathLike[str],
    meta: dict,
    keep: Callable[[np.ndarray], np.ndarray] | None = None,
    t1: int | None = None,
) -> dict[str, int]:
    """Write ``rec``'s chunks (each filtered by ``keep``, when given) and its entities
    (those from before ``t1``, when given; with ``keep``, of the stacks only those a kept
    row names, whenever written: a stack is written when its samples are placed, after
    the rows that name it, and a compile's thousands of stacks outside an excerpt would
    be most of it) to the new file ``dst`` with ``meta``, compressed for keeping; a
    failure leaves no ``dst``. Returns the rows written per stream (the file is not
    vacuumed yet: :func:`vacuum`)."""
    docs = stream_docs(rec.path)
    writer = RecordingWriter(dst, meta, archive=True)
    named: set[str] = set()
    try:
        for stream in rec.streams:
            for rows in rec.iter_chunks(stream):
                kept = rows if keep is None else keep(rows)
                if len(kept):
                    writer.append(stream, kept, docs.get(stream, ""))
                    writer.flush([stream])
                    if "stack_id" in (kept.dtype.names or ()):
                        named.update(str(i) for i in np.unique(kept["stack_id"]).tolist())
        for entity in rec.entities():
            if entity.kind == "stack" and keep is not None:
                if entity.key in named:
                    writer.add_entity(entity)
            elif t1 is None or entity.t_ns < t1:
                writer.add_entity(entity)
    except BaseException:
        writer.abandon()
        Path(dst).unlink(missing_ok=True)
        raise
    writer.close(meta)
    return dict(writer.rows_written)


def vacuum(path: str | os.PathLike[str], page_size: int) -> None:
    """Rewrite a closed recording compactly, in pages of ``page_size`` (the writer grew
    the file a flush at a time)."""
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA page_size={page_size}")
        db.execute("VACUUM")


def stream_docs(path: Path) -> dict[str, str]:
    """Each stream's description, as the recorder wrote it."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {name: doc or "" for name, doc in db.execute("SELECT name, doc FROM streams")}
