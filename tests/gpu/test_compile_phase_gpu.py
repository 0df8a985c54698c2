"""On a real GPU (pytest -m gpu): a ``torch.compile`` job recorded as a user would
(``gtop record -o F -- python3 benchmarks/workloads/compile_mlp.py``) reports its
compilation as a one-time phase, out of the window, and a steady verdict that is not
Python/CPU work (issue 25, item 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report

pytestmark = pytest.mark.gpu
WORKLOAD = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads" / "compile_mlp.py"


def test_compile_job_reports_its_compile_and_a_steady_verdict(tmp_path: Path) -> None:
    out = tmp_path / "compile-mlp.gtop"
    done = subprocess.run(
        [sys.executable, "-m", "gtop", "record", "-o", str(out), "--",
         sys.executable, str(WORKLOAD), "--steps", "200"],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    with Recording(out) as rec:
        report = read_report(rec)
    phases = [p for p in report["phases"] if p.get("one_time")]
    assert phases and phases[0]["name"] in ("compilation", "autotuning"), report["phases"]
    assert sum(p["seconds"] for p in phases) > 1.0
    assert report["window"]["from_s"] >= phases[0]["to_s"] - 0.01
    assert report["verdict"]["kind"] != "host-compute", report["verdict"]
