"""The agent's gtop side: its socket and decoding (link), getting it into a process
(attach, boot), and following a target's descendants with it (follow)."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``COLLECTOR``: :class:`~.follow.DescendantFollower` (opened once the session has an
    agent link; :func:`gtop.collectors.session_collectors`)."""
    if name == "COLLECTOR":
        from .follow import DescendantFollower

        return DescendantFollower
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
