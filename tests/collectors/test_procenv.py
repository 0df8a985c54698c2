"""Rank variables read from a real process's environment."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from gtop.collectors.host import describe, family
from gtop.collectors.procenv import dist_env


def _child(env: dict[str, str]) -> subprocess.Popen:
    code = "import sys; sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "ready\n"
    return proc


def test_rank_variables_of_a_child() -> None:
    proc = _child({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "x"})
    try:
        assert dist_env(proc.pid) == {"RANK": 3, "LOCAL_RANK": 1, "WORLD_SIZE": 4}
        assert describe(psutil.Process(proc.pid))["dist"]["RANK"] == 3
        assert proc.pid in family(os.getpid())
    finally:
        proc.stdin.close()
        proc.wait(10)


def test_no_rank_variables() -> None:
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK"):
        assert name not in os.environ, "the test runs outside a distributed job"
    proc = _child({})
    try:
        assert dist_env(proc.pid) is None
    finally:
        proc.stdin.close()
        proc.wait(10)


def test_unreadable_or_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(10)
    assert dist_env(proc.pid) is None
    assert dist_env(-5) is None
