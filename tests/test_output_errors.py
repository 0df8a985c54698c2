"""Output that cannot be written: a reader that went away (``| head``) ends gtop quietly,
a full disk (``> /dev/full``) in one line; never a traceback. Real processes, real pipes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import RECORDINGS

REC = str(RECORDINGS / "fixes" / "loader-8-workers.gtop")
"""A small real recording (0.5 s CPU a report, where train_loop_cupti took 2.7 s) whose
``report --json`` (250 KB) and chrome export (4.5 MB) outrun a pipe's 64 KiB buffer, so
the closed pipe is met by a write, not after the last one."""
COMMANDS = {
    "report": ["report", REC],
    "report-json": ["report", "--json", REC],
    "replay-once": ["replay", REC, "--once"],
    "replay-once-json": ["replay", REC, "--once", "--json"],
    "export-stdout": ["export", REC, "--format", "chrome", "-o", "-"],
    "doctor": ["doctor"],
}
GTOP = [sys.executable, "-m", "gtop"]


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_closed_pipe_ends_quietly(argv: list[str]) -> None:
    """As ``gtop ... | head -c 1``: the reader closes after one byte."""
    proc = subprocess.Popen([*GTOP, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    status = proc.wait(timeout=120)
    assert "Traceback" not in err, err
    assert status in (0, 141), (status, err)
    assert not [line for line in err.splitlines() if not line.startswith("gtop: exporting")]


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_full_disk_is_one_line(argv: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        out = subprocess.run(
            [*GTOP, *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    lines = [line for line in out.stderr.splitlines() if not line.startswith("gtop: exporting")]
    assert out.returncode == 1, out.stderr
    assert lines == ["gtop: cannot write standard output: No space left on device"], out.stderr
