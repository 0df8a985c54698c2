"""Which process an attach is aimed at, and which Python it runs: read from ``/proc``
and the ELF files it maps, never by running anything of its owner's. Light to import:
the injector child (:mod:`gtop.collectors.agent.injector`) runs it off gtop's
interpreter.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MIN_PYTHON = (3, 10)


class AttachError(Exception):
    """The agent could not get in; ``str()`` is one line: cause, then fix."""


@dataclass(frozen=True)
class Target:
    pid: int
    uid: int
    python: tuple[int, int]


def inspect(pid: int) -> Target:
    """Who ``pid`` is and which Python it runs.

    Raises:
        AttachError: no such process, or it is not CPython 3.10+.
    """
    from gtop.collectors.agent.pyversion import python_version  # not needed at a launch

    proc = Path(f"/proc/{pid}")
    try:
        uid = int(re.search(r"^Uid:\s+\d+\s+(\d+)", (proc / "status").read_text(), re.M)[1])
    except (OSError, TypeError):
        raise AttachError(f"pid {pid} does not exist; check the pid (ps -p {pid})") from None
    try:
        maps = (proc / "maps").read_text()
    except PermissionError:
        raise AttachError(
            f"pid {pid} belongs to uid {uid}: cannot read it as uid {os.geteuid()}; "
            "run gtop as that user or as root"
        ) from None
    except OSError:
        raise AttachError(f"pid {pid} exited; nothing to attach to") from None
    why: list[str] = []
    version = python_version(pid, maps, why)
    if version is None and _exiting(proc):
        raise AttachError(f"pid {pid} exited; nothing to attach to")
    if version is None:
        name = (proc / "comm").read_text().strip()
        raise AttachError(
            f"pid {pid} ({name}) is not a Python process: the agent needs CPython "
            f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}+ ({'; '.join(why)}); showing NVML and host "
            "data only"
        )
    if version < MIN_PYTHON:
        raise AttachError(
            f"pid {pid} runs Python {version[0]}.{version[1]}: the agent needs "
            f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}+; use gtop run with a newer Python"
        )
    return Target(pid, uid, version)


def _exiting(proc: Path) -> bool:
    """Whether the process is gone or on its way out (a zombie, or dead: its executable's
    link is gone before /proc lets it go, so its Python cannot be read)."""
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")
