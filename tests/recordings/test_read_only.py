"""An unclosed recording (its recorder SIGKILLed: a ``-wal`` beside it) reads back from
read-only media, and no reader ever creates a file beside its input."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gtop.recordings.reader import Recording

TARGETS = Path(__file__).resolve().parent.parent / "targets"


@pytest.fixture(scope="module")
def unclosed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``killed.gtop`` and its ``-wal``: a recorder SIGKILLed 2 s in."""
    folder = tmp_path_factory.mktemp("unclosed")
    path = folder / "killed.gtop"
    proc = subprocess.Popen(
        [sys.executable, str(TARGETS / "busy_writer.py"), str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        time.sleep(2.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    (folder / "killed.gtop-shm").unlink(missing_ok=True)  # as a copy to other media leaves it
    assert Path(f"{path}-wal").stat().st_size > 0
    return folder


def rows(path: Path) -> int:
    with Recording(path) as rec:
        assert rec.problems == [], rec.problems
        return len(rec.read("kernel"))


def gtop(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *argv], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def read_only_mount(unclosed: Path, tmp_path: Path) -> Iterator[Path]:
    """``unclosed`` bind-mounted read-only (as root; CI runs as root, so it runs there)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    view = tmp_path / "ro"
    view.mkdir()
    subprocess.run(["mount", "-o", "bind,ro", str(unclosed), str(view)], check=True)
    try:
        yield view
    finally:
        subprocess.run(["umount", "--lazy", str(view)], check=True)  # even if a file is open


def test_an_unclosed_recording_reads_from_a_read_only_mount(
    unclosed: Path, read_only_mount: Path
) -> None:
    with pytest.raises(OSError):
        (read_only_mount / "probe").touch()  # really read-only
    path = read_only_mount / "killed.gtop"
    assert rows(path) == rows(unclosed / "killed.gtop") > 0
    out = gtop("report", str(path))
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr


def test_readers_create_no_file_beside_their_input(unclosed: Path, tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    closed.mkdir()
    shutil.copy(Path(__file__).resolve().parents[2] / "recordings" / "idle_busy_idle.gtop", closed)
    for folder, name in ((unclosed, "killed.gtop"), (closed, "idle_busy_idle.gtop")):
        before = sorted(os.listdir(folder))
        rows(folder / name)
        for argv in (["report"], ["replay", "--once"], ["export", "--format", "chrome", "-o", "-"]):
            out = gtop(*argv[:1], str(folder / name), *argv[1:])
            assert out.returncode == 0, out.stderr
        assert sorted(os.listdir(folder)) == before
