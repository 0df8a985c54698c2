"""A launched command held before its exec (:mod:`gtop.collectors.gate`): nothing of it
runs until the release, then it runs in the same process as Popen would have run it."""

from __future__ import annotations

import errno
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtop.collectors.gate import Held

PRINT_FDS = "import os; print(os.getpid(), sorted(os.listdir('/proc/self/fd')))"


def _sig_ignored(status: str) -> str:
    return next(line for line in status.splitlines() if line.startswith("SigIgn:"))


def test_nothing_runs_before_the_release_and_the_pid_is_kept(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"import os; open({str(marker)!r}, 'w').write(str(os.getpid()))"
    held = Held([sys.executable, "-c", code])
    time.sleep(0.3)
    assert not marker.exists()
    assert held.process.poll() is None  # waiting at the gate
    proc = held.release()
    assert proc.wait(30) == 0
    assert marker.read_text() == str(held.pid)


def test_the_command_gets_what_popen_would_give_it() -> None:
    """The same open descriptors and the same ignored signals (Python ignores SIGPIPE
    and SIGXFSZ; Popen restores them before an exec, so does the gate)."""
    cmd = [sys.executable, "-c", PRINT_FDS]
    direct = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    gated = Held(cmd, stdout=subprocess.PIPE, text=True).release()
    out, _ = gated.communicate(timeout=30)
    assert out.split(" ", 1)[1] == direct.split(" ", 1)[1]
    assert int(out.split()[0]) == gated.pid

    status = ["cat", "/proc/self/status"]
    direct = subprocess.run(status, capture_output=True, text=True, check=True).stdout
    gated = Held(status, stdout=subprocess.PIPE, text=True).release()
    assert _sig_ignored(gated.communicate(timeout=30)[0]) == _sig_ignored(direct)


def test_an_exec_failure_is_popens_error_at_the_release() -> None:
    with pytest.raises(OSError) as popen_error:
        subprocess.Popen(["/etc/passwd"])
    held = Held(["/etc/passwd"])
    with pytest.raises(OSError) as gated_error:
        held.release()
    assert gated_error.value.errno == popen_error.value.errno == errno.EACCES
    held = Held(["no-such-command-for-the-gate"])
    with pytest.raises(OSError) as missing:
        held.release()
    assert missing.value.errno == errno.ENOENT
    assert held.process.returncode is not None  # the gate has exited


def test_a_cancelled_command_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    held = Held([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    held.cancel()
    assert held.process.returncode == 1
    assert not marker.exists()
