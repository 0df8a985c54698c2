"""Where an export may write: never the recording or a side file SQLite keeps beside it
(existing or not, even while it records), never into folders it had to make, and with
the user's umask. Real ``gtop export`` processes."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RECORDINGS

DEMO = RECORDINGS / "idle_busy_idle.gtop"


def export(*argv: str, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gtop", "export", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=None if umask is None else lambda: os.umask(umask),
    )


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and lines[0].startswith("gtop:"), out.stderr
    return lines[0]


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm", "-journal"])
@pytest.mark.parametrize("exists", [False, True])
def test_no_export_writes_a_recordings_side_file(tmp_path: Path, suffix: str, exists: bool) -> None:
    rec = tmp_path / "r.gtop"
    shutil.copy(DEMO, rec)
    side = Path(f"{rec}{suffix}")
    if exists and suffix:
        side.write_bytes(b"")  # an empty WAL/SHM, as a recorder has just opened them
    before = rec.read_bytes()
    for fmt in ("chrome", "csv"):
        line = one_line(export(str(rec), "--format", fmt, "-o", str(side)))
        assert "is the recording" in line
    assert rec.read_bytes() == before
    assert side.exists() == (exists or not suffix)


@pytest.mark.parametrize("fmt", ["csv", "chrome", "folded"])
def test_no_format_makes_missing_folders(tmp_path: Path, fmt: str) -> None:
    line = one_line(export(str(DEMO), "--format", fmt, "-o", str(tmp_path / "no" / "dir" / "out")))
    assert "No such file or directory" in line
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("fmt", ["csv", "chrome", "folded"])
def test_exports_respect_the_umask(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "out"
    done = export(str(DEMO), "--format", fmt, "-o", str(out), umask=0o077)
    assert done.returncode == 0, done.stderr
    made = [p for p in tmp_path.rglob("*")]
    assert made
    for path in made:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, (path, oct(mode))
