"""A real ``gtop record`` on a full disk says so in one line and keeps what it committed;
one killed with SIGKILL leaves a file that reads back without its ``-wal``."""

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
from gtop.recordings.recorder import CHECKPOINT_INTERVAL_S, FLUSH_INTERVAL_S


@pytest.fixture
def target() -> Iterator[subprocess.Popen]:
    """A real process that wakes often (so the host tier has rows to record)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.001)"])
    yield proc
    proc.kill()
    proc.wait()


def record(pid: int, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "gtop", "record", "--pid", str(pid), "-o", str(out),
        "--interval", "0.1", "--no-agent", "--host-tier", "proc", *extra,
    ]  # fmt: skip


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs of our own, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave_kib: int) -> None:
    """Take all but about ``leave_kib`` KiB of ``disk``."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    (disk / "ballast").write_bytes(bytes(max(0, free - leave_kib * 1024)))


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr and len(lines) == 1 and lines[0].startswith("gtop:"), stderr
    return lines[0]


def test_full_disk_at_start_leaves_nothing(target, small_disk: Path) -> None:
    fill(small_disk, leave_kib=8)
    out = small_disk / "r.gtop"
    done = subprocess.run(
        record(target.pid, out, "--duration", "5"), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "the disk is full" in one_line(done.stderr)
    assert sorted(p.name for p in small_disk.iterdir()) == ["ballast"]


def test_full_disk_mid_recording_keeps_what_was_committed(target, small_disk: Path) -> None:
    fill(small_disk, leave_kib=200)
    out = small_disk / "r.gtop"
    done = subprocess.run(
        record(target.pid, out, "--duration", "120"), capture_output=True, text=True, timeout=150
    )
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert "recording stopped" in line and "disk is full" in line and "rows" in line
    kept = int(line.split(" keeps the ")[1].split()[0])
    with Recording(out) as rec:
        rows = sum(len(rec.read(s)) for s in rec.streams)
        assert rec.meta.get("closed") is None and rec.meta["target"]["pid"] == target.pid
    assert rows == kept > 0
    assert all(p.stat().st_size > 0 for p in small_disk.iterdir())


def test_a_copy_without_its_wal_holds_all_but_the_last_seconds(target, tmp_path: Path) -> None:
    out = tmp_path / "live" / "r.gtop"
    out.parent.mkdir()
    proc = subprocess.Popen(record(target.pid, out), stderr=subprocess.DEVNULL)
    try:
        time.sleep(3 * CHECKPOINT_INTERVAL_S + 2)
        killed_at = time.monotonic_ns()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    assert Path(f"{out}-wal").exists(), "the recorder wrote in WAL mode"
    alone = tmp_path / "copy" / "r.gtop"
    alone.parent.mkdir()
    shutil.copyfile(out, alone)  # what `cp r.gtop elsewhere` takes
    with Recording(alone) as rec:
        times = rec.read("proc_host")["t_ns"]
        assert rec.problems == []
    assert len(times) >= 20
    lost_s = (killed_at - int(times.max())) / 1e9
    assert lost_s <= CHECKPOINT_INTERVAL_S + 3 * FLUSH_INTERVAL_S + 1.5  # slack for load
