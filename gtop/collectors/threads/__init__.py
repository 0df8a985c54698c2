"""The host-thread tiers (bpf, perf, proc) and what they share; :mod:`.tiers` picks one."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    """``COLLECTOR``: :class:`~.tiers.HostThreads`, loaded only when a session asks
    (:func:`gtop.collectors.session_collectors`)."""
    if name == "COLLECTOR":
        from .tiers import HostThreads

        return HostThreads
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
