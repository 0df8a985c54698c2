"""Run one command to its end and measure it from outside (shared by the overhead scripts).

Wall time from launch to exit; the process's own CPU time (user+sys of its threads, read
from /proc while it runs, so a launched target's CPU, reaped by gtop, is not counted as
gtop's) and its peak RSS (``VmHWM``); the workload's result line, which is either
``{"case": ...}`` (the scripts under workloads/) or ``result {...}`` (common.py's).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Any

POLL_S = 0.05
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Measured:
    rc: int
    wall_s: float
    t0_ns: int
    t1_ns: int
    cpu_s: float
    """CPU time of the command's own process (its children not included)."""
    peak_rss_mb: float
    result: dict[str, Any] | None
    stderr_tail: str = ""

    def row(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "stderr_tail"}


def _cpu_s(pid: int) -> float | None:
    """user+sys seconds of ``pid``'s own threads (a zombie's are final), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICK


def _peak_rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def parse_result(text: str) -> dict[str, Any] | None:
    """The last result line of a workload's output."""
    found = None
    for line in text.splitlines():
        if line.startswith('{"case"'):
            found = json.loads(line)
        elif line.startswith("result {"):
            found = json.loads(line[len("result ") :])
    return found


def run(cmd: list[str], env: dict[str, str] | None = None, timeout_s: float = 200) -> Measured:
    """Run ``cmd`` (output captured to temporary files, so no pipe can fill up)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic_ns()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, stdin=subprocess.DEVNULL)
        cpu = rss = 0.0
        deadline = time.monotonic() + timeout_s
        flags = os.WEXITED | os.WNOWAIT | os.WNOHANG
        while os.waitid(os.P_PID, proc.pid, flags) is None:  # exited, not yet reaped
            rss = _peak_rss_mb(proc.pid) or rss
            if time.monotonic() > deadline:
                proc.kill()
                break
            time.sleep(POLL_S)
        t1 = time.monotonic_ns()
        cpu = _cpu_s(proc.pid) or 0.0  # the zombie's totals, before it is reaped
        proc.wait()
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    result = parse_result(text)
    return Measured(
        rc=proc.returncode,
        wall_s=(t1 - t0) / 1e9,
        t0_ns=t0,
        t1_ns=t1,
        cpu_s=cpu,
        peak_rss_mb=rss,
        result=result,
        stderr_tail=errors[-800:] if proc.returncode or result is None else "",
    )
