"""How the damaged files of ``tests/fuzz/corpus/`` were made (issue 28's audit found each
breaking gtop): ``python3 -m tests.fuzz.make_corpus``. The files are kept as made, and
the corpus only grows: a file that ever broke gtop stays, whatever the code does now."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from tests.conftest import RECORDINGS

CORPUS = Path(__file__).resolve().parent / "corpus"
BASE = RECORDINGS / "train_loop_nvml.gtop"
"""Small (23 KB): NVML and host data of a training loop, the approximate path."""


def _recursive_view(db: sqlite3.Connection) -> None:
    """Every command hung at 1.4-1.7 GB reading the index (reader.py's fetchall)."""
    db.execute("ALTER TABLE chunks RENAME TO chunks_data")
    db.execute(
        "CREATE VIEW chunks AS WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 "
        "FROM r) SELECT id, 'gpu' AS stream, 0 AS t_first, 0 AS t_last, 1 AS n, 0 AS crc, "
        "x'00' AS data FROM r"
    )


def _target(pid: object) -> Callable[[sqlite3.Connection], None]:
    """A target pid no process has: OverflowError in approximate.py (a C long)."""

    def edit(db: sqlite3.Connection) -> None:
        (text,) = db.execute("SELECT value FROM meta WHERE key = 'target'").fetchone()
        target = {**json.loads(text), "pid": pid}
        db.execute("UPDATE meta SET value = ? WHERE key = 'target'", (json.dumps(target),))

    return edit


def _virtual_streams(db: sqlite3.Connection) -> None:
    """A table the reader reads replaced by a virtual one (code of the file's choosing)."""
    db.execute("ALTER TABLE streams RENAME TO layouts")
    db.execute("CREATE VIRTUAL TABLE streams USING fts5(name, dtype, doc)")
    db.execute("INSERT INTO streams SELECT name, dtype, doc FROM layouts")


CASES: dict[str, Callable[[sqlite3.Connection], None]] = {
    "chunks-recursive-view": _recursive_view,
    "target-pid-10e30": _target(10**30),
    "target-pid-2e63": _target(2**63),
    "target-pid-float": _target(1e300),
    "target-pid-text": _target("x"),
    "streams-virtual-table": _virtual_streams,
}


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    for name, damage in CASES.items():
        out = CORPUS / f"{name}.gtop"
        shutil.copyfile(BASE, out)
        with sqlite3.connect(out) as db:
            damage(db)
        db.close()
        with sqlite3.connect(out) as db:
            db.execute("VACUUM")
        db.close()


if __name__ == "__main__":
    main()
