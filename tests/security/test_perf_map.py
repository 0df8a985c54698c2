"""Files a profiled user controls and gtop (as root) reads to name frames: a planted
``/tmp/perf-PID.map`` (a FIFO, a link to /dev/zero, a file of someone else) neither hangs
gtop nor fills its memory nor is believed; a mapped file swapped for a FIFO does not hang
it either."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from gtop.collectors.threads.symbols import UNKNOWN, ProcessSymbols

JIT_ADDR = 0x1000  # below every mapping, so only the perf map can name it


def resolve_within(pid: int, seconds: float = 5.0) -> str:
    """The name of JIT_ADDR in ``pid``, failing if resolving blocks."""
    out: list[str] = []
    t = threading.Thread(
        target=lambda: out.extend(ProcessSymbols(pid).resolve([JIT_ADDR])), daemon=True
    )
    t.start()
    t.join(seconds)
    assert out, f"resolving pid {pid}'s perf map blocked for {seconds} s"
    return out[0]


@pytest.fixture
def target(attacker, processes):
    proc = attacker.popen(["sleep", "60"])
    processes.append(proc)
    perf_map = Path(f"/tmp/perf-{proc.pid}.map")
    yield proc, perf_map
    perf_map.unlink(missing_ok=True)


def plant(perf_map: Path, uid: int, gid: int) -> None:
    os.chown(perf_map, uid, gid, follow_symlinks=False)


def test_own_perf_map_resolves(target, attacker):
    proc, perf_map = target
    perf_map.write_text("1000 100 jitted_fn\n")
    plant(perf_map, attacker.uid, attacker.gid)
    assert resolve_within(proc.pid) == "jitted_fn"


def test_planted_fifo_does_not_hang(target, attacker):
    proc, perf_map = target
    os.mkfifo(perf_map)
    plant(perf_map, attacker.uid, attacker.gid)
    assert resolve_within(proc.pid) == UNKNOWN


def test_planted_link_to_dev_zero_is_not_followed(target, attacker):
    proc, perf_map = target
    perf_map.symlink_to("/dev/zero")
    plant(perf_map, attacker.uid, attacker.gid)
    assert resolve_within(proc.pid) == UNKNOWN


def test_planted_link_to_a_real_map_is_not_followed(target, attacker, tmp_path):
    proc, perf_map = target
    real = tmp_path / "real.map"
    real.write_text("1000 100 jitted_fn\n")
    os.chown(real, attacker.uid, attacker.gid)
    perf_map.symlink_to(real)
    plant(perf_map, attacker.uid, attacker.gid)
    assert resolve_within(proc.pid) == UNKNOWN


def test_a_map_of_another_owner_is_not_believed(target):
    proc, perf_map = target
    perf_map.write_text("1000 100 planted_by_root_or_a_third_user\n")
    assert resolve_within(proc.pid) == UNKNOWN


def test_a_huge_map_is_read_up_to_the_cap(target, attacker):
    proc, perf_map = target
    with open(perf_map, "w") as f:
        f.write("1000 100 jitted_fn\n")
        f.truncate(4 << 30)  # 4 GiB, sparse: NUL bytes after the first line
    plant(perf_map, attacker.uid, attacker.gid)
    assert resolve_within(proc.pid, 20) == "jitted_fn"


def test_a_mapped_file_swapped_for_a_fifo_does_not_hang(attacker, user_dir, processes):
    """The user puts a FIFO where the executable their process maps was: symbolising
    its frames must not block on opening that path."""
    exe = user_dir / "swapped"
    exe.write_bytes(Path("/bin/sleep").read_bytes())
    os.chmod(exe, 0o755)
    os.chown(exe, attacker.uid, attacker.gid)
    proc = attacker.popen([str(exe), "60"])
    processes.append(proc)
    deadline = time.monotonic() + 5
    text = ""
    while str(exe) not in text and time.monotonic() < deadline:
        text = Path(f"/proc/{proc.pid}/maps").read_text()
    start = next(
        int(line.split("-")[0], 16)
        for line in text.splitlines()
        if line.endswith(str(exe)) and " r-xp " in line
    )
    exe.unlink()  # the mapping now reads "<path> (deleted)": plant FIFOs at both names
    deleted = user_dir / "swapped (deleted)"
    os.mkfifo(exe)
    os.mkfifo(deleted)
    out: list[str] = []
    t = threading.Thread(
        target=lambda: out.extend(ProcessSymbols(proc.pid).resolve([start])), daemon=True
    )
    t.start()
    t.join(5)
    assert out and out[0].startswith("swapped"), out
