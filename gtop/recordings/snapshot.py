"""Opening a recording for reading without writing anything beside it.

SQLite opening a database in WAL mode wants its ``-shm`` (and ``-wal``) beside the file:
it creates them where it can, and where it cannot (read-only media, a folder the reader
may not write) it refuses, so a recording whose recorder was SIGKILLed could not be read
from there. Here:

- a recording with a ``-wal`` beside it (unclosed: recording now, or killed) is copied,
  with its WAL, into a private temporary folder; SQLite folds the WAL into the copy
  there, and the copy, unlinked at once, is what is read;
- any other is opened ``immutable``: read as it is, no lock, no side file.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from pathlib import Path

SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside a database (a recording's own side files)."""


def _uri(path: Path, **params: str) -> str:
    """A ``file:`` URI for ``path`` (``?`` and ``#`` in a name are quoted, not read as
    query or fragment)."""
    from urllib.parse import quote

    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{quote(str(path.absolute()))}?{query}"


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to the recording at ``path``; creates no file beside it.

    Raises:
        sqlite3.DatabaseError: SQLite cannot open it.
        OSError: the unclosed recording cannot be copied (no room in the temporary folder).
    """
    wal = Path(f"{path}-wal")
    if not wal.is_file():
        return _connect(_uri(path, mode="ro", immutable="1"))
    folder = tempfile.mkdtemp(prefix="gtop-read-")  # mode 0700: only this user reads it
    try:
        copy = Path(folder) / "r.gtop"
        shutil.copyfile(path, copy)
        with contextlib.suppress(FileNotFoundError):  # its recorder closed it meanwhile
            shutil.copyfile(wal, f"{copy}-wal")
        _fold_wal(copy)
        return _connect(_uri(copy, mode="ro", immutable="1"))  # open: the name can go
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fold_wal(copy: Path) -> None:
    """Fold ``copy``'s WAL into it (SQLite replays what was committed), leaving one file."""
    db = sqlite3.connect(copy)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")
    except sqlite3.DatabaseError:
        pass  # a damaged WAL or file: read the file as it is
    finally:
        db.close()


def _connect(uri: str) -> sqlite3.Connection:
    return sqlite3.connect(uri, uri=True, check_same_thread=False)
