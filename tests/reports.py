"""``read_report`` of a committed recording, computed once per test session.

Many tests check a different part of the same recording's report; computing it is most
of their time (seconds each on the large recordings). The first test (in any xdist
worker) to ask for a recording's report computes it and leaves it pickled in a folder
the session's workers share; every other test reads that file. Each call returns a
fresh copy, so a test may change what it gets.
"""

from __future__ import annotations

import fcntl
import functools
import pickle
from pathlib import Path
from typing import Any

from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report

_folder: list[Path] = []


def share_in(folder: Path) -> None:
    """Keep reports in ``folder`` (one per test session, shared by its workers)."""
    folder.mkdir(exist_ok=True)
    _folder[:] = [folder]


def report_of(path: Path) -> dict[str, Any]:
    """``read_report`` of the recording at ``path``, as computed once this session."""
    return pickle.loads(_pickled(path.resolve()))


@functools.cache
def _pickled(path: Path) -> bytes:
    if not _folder:  # outside a pytest session (a test module run as a script)
        return _compute(path)
    stored = _folder[0] / (str(path).strip("/").replace("/", "-") + ".pickle")
    with open(stored.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be computing it
        if not stored.exists():
            partial = stored.with_suffix(".partial")
            partial.write_bytes(_compute(path))
            partial.rename(stored)
    return stored.read_bytes()


def _compute(path: Path) -> bytes:
    with Recording(path) as rec:
        return pickle.dumps(read_report(rec))
