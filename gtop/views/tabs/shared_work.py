"""Work several tab workers ask for at once, done once.

The verdict line and the GPU time tab both attribute the same window of the same
snapshot (after a seek, or when GPU time opens): two threads computing the same thing
for ~0.5 s each, sharing one GIL with the UI thread. :class:`SharedWork` runs the first
request for a key and makes the others wait for its result.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

KEPT = 12
"""Results kept (the latest keys; a window's GPU time, verdict and predicted gains are
three); older ones are computed again if asked for."""


class _Entry:
    __slots__ = ("done", "error", "pin", "value")

    def __init__(self, pin: object) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.pin = pin
        """What the key's ids refer to, kept alive so an id is not reused meanwhile."""


class SharedWork:
    """``get(key, pin, compute)``: ``compute()``'s result for ``key``, computed once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()

    def get(self, key: Hashable, pin: object, compute: Callable[[], Any]) -> Any:
        with self._lock:
            entry = self._entries.get(key)
            owner = entry is None
            if entry is None:
                entry = self._entries[key] = _Entry(pin)
                while len(self._entries) > KEPT:
                    self._entries.popitem(last=False)
        if owner:
            try:
                entry.value = compute()
            except BaseException as exc:  # the waiters get it too
                entry.error = exc
                with self._lock:
                    self._entries.pop(key, None)
            finally:
                entry.done.set()
        else:
            entry.done.wait()
        if entry.error is not None:
            raise entry.error
        return entry.value

    def clear(self) -> None:
        """Forget every result (a new session, as a benchmark's next repeat)."""
        with self._lock:
            self._entries.clear()
