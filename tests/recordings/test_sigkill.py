"""A recorder killed with SIGKILL leaves a file that reads back up to its last flush."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gtop.recordings.reader import Recording

TARGETS = Path(__file__).resolve().parent.parent / "targets"


def test_sigkilled_recorder_loses_at_most_one_second(tmp_path: Path) -> None:
    path = tmp_path / "killed.gtop"
    proc = subprocess.Popen(
        [sys.executable, str(TARGETS / "busy_writer.py"), str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        time.sleep(2.5)
        killed_at = time.monotonic_ns()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    with Recording(path) as rec:
        rows = rec.read("kernel")
        assert rec.problems == []
        assert rec.meta.get("closed") is None  # never finalised
    assert killed_at - int(rows["t_ns"].max()) <= 1_000_000_000
    seq = rows["correlation"].astype(np.int64)
    assert np.array_equal(seq, np.arange(len(seq))), "rows lost or duplicated before the kill"


def test_sigkilled_gtop_record_still_reports(tmp_path: Path) -> None:
    path = tmp_path / "cli.gtop"
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    rec = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gtop",
            "record",
            "--pid",
            str(target.pid),
            "-o",
            str(path),
            "--interval",
            "0.1",
        ],
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            time.sleep(0.3)
            if path.exists() and Path(f"{path}-wal").exists():
                try:
                    with Recording(path) as r:
                        if len(r.read("proc_host")) >= 5:
                            break
                except Exception:
                    continue
        os.kill(rec.pid, signal.SIGKILL)
        rec.wait(10)
    finally:
        rec.kill()
        target.kill()
        target.wait()
    out = subprocess.run(
        [sys.executable, "-m", "gtop", "report", "--json", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["complete"] is False
    assert [p["pid"] for p in report["processes"]] == [target.pid]
    assert report["processes"][0]["cpu_percent"]["n"] >= 5
