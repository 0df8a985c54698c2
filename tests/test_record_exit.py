"""``gtop record`` exits as ``perf record`` does: with the launched command's status
(128+N when signal N killed it), 130 on Ctrl-C after finalising the recording; the
status is stored in the recording and shown by ``gtop report``. Real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtop.recordings.reader import Recording

GTOP = [sys.executable, "-m", "gtop"]
SLEEPER = "import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(60)"
"""A target that Ctrl-C ends as it ends a C program: quietly."""


def record(out: Path, code: str) -> subprocess.CompletedProcess[str]:
    argv = [*GTOP, "record", "-o", str(out), "--", sys.executable, "-c", code]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def report(path: Path) -> tuple[dict, str]:
    doc = subprocess.run([*GTOP, "report", "--json", str(path)], capture_output=True, text=True)
    text = subprocess.run([*GTOP, "report", str(path)], capture_output=True, text=True)
    return json.loads(doc.stdout), text.stdout


@pytest.mark.parametrize(
    ("code", "status", "words"),
    [
        ("import sys, time; time.sleep(0.3); sys.exit(3)", 3, "target exit: status 3"),
        (
            "import os, signal, time; time.sleep(0.3); os.kill(os.getpid(), signal.SIGSEGV)",
            128 + signal.SIGSEGV,
            "target exit: status 139 (killed by SIGSEGV)",
        ),
        ("pass", 0, "target exit: status 0"),
    ],
)
def test_record_exits_with_the_commands_status(
    tmp_path: Path, code: str, status: int, words: str
) -> None:
    out = tmp_path / "r.gtop"
    done = record(out, code)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    doc, text = report(out)
    assert doc["complete"] is True
    assert doc["target"]["exit_status"] == status
    assert words in text
    with Recording(out) as rec:  # the replay's summary says "✝ exited" at the end
        pid = str(rec.meta["target"]["pid"])
        seen = [e.value for e in rec.entities() if e.kind == "process" and e.key == pid]
    if "sleep" in code:  # (seen before it exits; "pass" may end before the first look)
        assert seen and seen[-1].get("exited"), seen


def test_ctrl_c_finalises_the_recording_and_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "r.gtop"
    argv = [
        *GTOP,
        "record",
        "-o",
        str(out),
        "--",
        sys.executable,
        "-c",
        SLEEPER,
    ]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not out.exists():  # the recorder has started
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.1)
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "gtop: wrote" in err
    doc, _ = report(out)
    assert doc["complete"] is True


@pytest.mark.parametrize("cmd", [[""], []])
def test_an_empty_or_missing_command_is_one_line(tmp_path: Path, cmd: list[str]) -> None:
    out = tmp_path / "r.gtop"
    done = subprocess.run(
        [*GTOP, "record", "-o", str(out), "--", *cmd], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "gtop: give the command to launch after --, e.g. -- python train.py"
    ]
    assert not out.exists()
