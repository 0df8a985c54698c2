"""Helpers for the agent tests: target processes that answer commands, and what a
subscription received."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from gtop.collectors.agent.attach import launch_with_agent
from gtop.collectors.agent.link import AgentLink
from gtop.core import streams
from gtop.core.hub import Entity, Subscription

HERE = Path(__file__).parent
TARGETS = HERE / "targets"


class Target:
    """A running target process that answers one line per command."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.pid = proc.pid
        # read on a thread, so that readline's timeout holds even if the target hangs
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        try:
            for line in self.proc.stdout:
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def readline(self, timeout: float = 10.0) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"target said nothing within {timeout} s") from None
        if line is None:
            self._lines.put(None)
            raise AssertionError(f"target said nothing (exit code {self.proc.poll()})")
        return line.strip()

    def send(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def ask(self, command: str) -> str:
        self.send(command)
        return self.readline()


class Received:
    """Everything a subscription has delivered so far, accumulated across polls."""

    def __init__(self, sub: Subscription) -> None:
        self.sub = sub
        self.batches: dict[str, list[np.ndarray]] = {}
        self.entities: list[Entity] = []

    def poll(self) -> None:
        update = self.sub.poll()
        for stream, batch in update.batches.items():
            self.batches.setdefault(stream, []).append(batch)
        self.entities += update.entities

    def rows(self, stream: str) -> np.ndarray:
        got = self.batches.get(stream)
        return np.concatenate(got) if got else np.empty(0, dtype=streams.get(stream).dtype)

    def wait(self, stream: str, rows: int, timeout: float = 10.0) -> np.ndarray:
        """Poll until ``stream`` has at least ``rows`` rows or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        self.poll()
        while len(self.rows(stream)) < rows and time.monotonic() < deadline:
            time.sleep(0.02)
            self.poll()
        return self.rows(stream)

    def named(self, kind: str, timeout: float = 5.0) -> dict[str, dict]:
        """Entities of ``kind`` by key, waiting until at least one arrived."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            found = {e.key: e.value for e in self.entities if e.kind == kind}
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.02)


def start_target(
    procs: list[subprocess.Popen],
    args: list[str],
    env: dict[str, str] | None = None,
    link: AgentLink | None = None,
    ready_s: float = 10.0,
) -> Target:
    """Start a target (under ``link``'s launcher when given); wait ``ready_s`` for "ready"."""
    full_env = {**os.environ, **(env or {})}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    if link is not None:
        proc = launch_with_agent(args, link, env=full_env, **pipes)
    else:
        proc = subprocess.Popen(args, env=full_env, **pipes)
    procs.append(proc)
    target = Target(proc)
    assert target.readline(ready_s) == "ready"
    return target


def script(name: str, python: str = sys.executable) -> list[str]:
    return [python, str(TARGETS / name)]


# --- kernel sampling (test_sampling_agent.py, test_gpu_sampling.py) ---------------------

EDGE_NS = 5_000_000
"""A kernel launched just as tracing switches may be traced or not (the contract counts
those microseconds as untraced); under this machine's load the agent thread can also be
preempted between reading the time and the CUPTI call: 5 ms either side is left out."""


def spans(got: Received) -> tuple[np.ndarray, np.ndarray]:
    """The untraced rows as published (in order), and the closed spans."""
    got.poll()
    rows = got.rows("untraced")
    return rows, rows[rows["end_ns"] >= 0]


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def open_now(got: Received) -> bool:
    """An off phase is in progress (the last row published is an open span)."""
    rows, _ = spans(got)
    return len(rows) > 0 and rows["end_ns"][-1] == -1


def assert_alternating(rows: np.ndarray, pid: int) -> None:
    """Open, closed (the same span), open, closed, ...: spans sorted and disjoint."""
    assert (rows["pid"] == pid).all()
    opens, closes = rows[0::2], rows[1::2]
    assert (opens["end_ns"] == -1).all() and (closes["end_ns"] >= 0).all()
    assert (closes["t_ns"] == opens["t_ns"][: len(closes)]).all()
    assert (closes["end_ns"] > closes["t_ns"]).all()
    assert (opens["t_ns"][1:] >= closes["end_ns"][: len(opens) - 1]).all()


def records_inside(rows: np.ndarray, closed: np.ndarray) -> int:
    """How many of ``rows`` start inside a closed untraced span (its edges left out)."""
    inner = [(t + EDGE_NS, e - EDGE_NS) for t, e in closed[["t_ns", "end_ns"]]]
    return sum(int(((rows["t_ns"] > a) & (rows["t_ns"] < b)).sum()) for a, b in inner)
