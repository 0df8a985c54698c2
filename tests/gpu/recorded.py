"""A workload of ``benchmarks/workloads/`` recorded as a user would (``gtop record -o F --
python3 WORKLOAD ARGS``, the default mode), with the JSON line it printed: what it timed
itself. Set GTOP_EVIDENCE=DIR to keep the recording there (a failed GPU test's file is
then still there to read: the GPU session's ``$OUT``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORKLOADS = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads"


def record(folder: Path, workload: str, *args: str, timeout: float) -> tuple[Path, dict]:
    """Record ``workload`` (a file name in ``benchmarks/workloads/``) into ``folder``;
    the recording's path and the workload's own JSON line."""
    keep = os.environ.get("GTOP_EVIDENCE")
    if keep:
        folder = Path(keep)
        folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"{Path(workload).stem}.gtop"
    out.unlink(missing_ok=True)  # (a file kept from an earlier run)
    done = subprocess.run(
        [sys.executable, "-m", "gtop", "record", "-o", str(out), "--",
         sys.executable, str(WORKLOADS / workload), *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return out, json.loads(done.stdout.strip().splitlines()[-1])
