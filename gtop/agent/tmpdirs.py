"""Private temporary folders that do not outlive their process for long.

A folder is named ``<prefix><pid>-<random>`` (``mkdtemp``: 0700, new). Whoever is killed
before removing its own leaves it behind; the next process of the same user that makes
one with the same prefix removes every such folder that is its user's and whose process
is gone (:func:`make`). Standard library only: the agent uses it inside targets.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path


def make(prefix: str) -> Path:
    """A new private folder ``<tmp>/<prefix><pid>-<random>``, after removing stale ones."""
    remove_stale(prefix)
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))


def remove_stale(prefix: str, tmp: str | None = None) -> list[str]:
    """Remove this user's ``<prefix><pid>-*`` folders whose process is gone; their names."""
    tmp = tmp or tempfile.gettempdir()
    pattern = re.compile(re.escape(prefix) + r"(\d+)-\w+$")
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(tmp):
            m = pattern.match(entry.name)
            if m is None or os.path.exists(f"/proc/{m[1]}"):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid():
                shutil.rmtree(entry.path, ignore_errors=True)  # never follows links
                removed.append(entry.name)
    return removed
