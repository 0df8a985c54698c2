"""Helpers for the agent tests: target processes that answer commands, and what a
subscription received."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from gtop.collectors.agent_link import AgentLink
from gtop.collectors.attach import launch_with_agent
from gtop.pipeline import streams
from gtop.pipeline.hub import Entity, Subscription

HERE = Path(__file__).parent
TARGETS = HERE / "targets"


class Target:
    """A running target process that answers one line per command."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.pid = proc.pid

    def readline(self, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line:
                return line.strip()
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"target said nothing (exit code {self.proc.poll()})")

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
) -> Target:
    """Start a target (under ``link``'s launcher when given) and wait for "ready"."""
    full_env = {**os.environ, **(env or {})}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
    if link is not None:
        proc = launch_with_agent(args, link, env=full_env, **pipes)
    else:
        proc = subprocess.Popen(args, env=full_env, **pipes)
    procs.append(proc)
    target = Target(proc)
    assert target.readline() == "ready"
    return target


def script(name: str, python: str = sys.executable) -> list[str]:
    return [python, str(TARGETS / name)]
