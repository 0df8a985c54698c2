"""Deduplicated stacks: each distinct stack is published once as an ``Entity("stack")``.

A stack is a tuple of frame names, outermost first, with a parallel string of frame kinds:
``p`` Python, ``n`` native, ``k`` kernel. Records refer to it by ``stack_id``.
"""

from __future__ import annotations

import threading
import time

from gtop.core.hub import Entity, Hub

PYTHON, NATIVE, KERNEL = "p", "n", "k"


class StackTable:
    """Interns stacks and publishes each new one to the hub."""

    def __init__(self, hub: Hub | None) -> None:
        self._hub = hub
        self._ids: dict[tuple[tuple[str, ...], str], int] = {}
        self._lock = threading.Lock()

    def intern(self, frames: tuple[str, ...], kinds: str) -> int:
        """The id of a stack (outermost frame first); ``-1`` for an empty stack."""
        if not frames:
            return -1
        key = (frames, kinds)
        sid = self._ids.get(key)
        if sid is not None:
            return sid
        with self._lock:
            sid = self._ids.setdefault(key, len(self._ids))
        if self._hub is not None:
            value = {"frames": list(frames), "kinds": kinds}
            self._hub.publish_entity(Entity("stack", str(sid), time.monotonic_ns(), value))
        return sid
