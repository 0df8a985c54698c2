"""The state views draw from: recent history per stream, entities, drops and the clock.

Sources (live or replay) deliver :class:`~gtop.core.hub.Update` objects; the model
applies them on the UI thread. Views read the model and never learn where data came
from. Memory is bounded: each stream keeps at most ``history_s`` seconds and at most
``max_rows`` rows; rows pushed out by the row cap before they aged out are counted in
:attr:`Model.evicted` and shown, since the views then see less than their window.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gtop.core.hub import Entity, Update
from gtop.core.safe_text import shown_tree

DEFAULT_HISTORY_S = 120.0
DEFAULT_MAX_ROWS = 2_000_000


@dataclass(frozen=True)
class Slice:
    """The rows of one stream with ``t0 <= t_ns <= t1``, joined only when asked: taking
    a slice is cheap (the UI thread does), joining the batches is not (a worker does).
    The batches are the history's own, never written to, so a worker may join them
    while the UI thread appends."""

    parts: tuple[np.ndarray, ...]
    dtype: np.dtype
    t0: int
    t1: int

    def rows(self) -> np.ndarray:
        if not self.parts:
            return np.empty(0, dtype=self.dtype)
        rows = self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts)
        times = rows["t_ns"]
        return rows[(times >= self.t0) & (times <= self.t1)]


class History:
    """Recent rows of one stream, oldest first, as a deque of frozen batches."""

    def __init__(self, dtype: np.dtype, history_s: float, max_rows: int) -> None:
        self.dtype = dtype
        self.history_ns = int(history_s * 1e9)
        self.max_rows = max_rows
        self._batches: deque[np.ndarray] = deque()
        self.rows = 0
        self.evicted = 0

    def append(self, batch: np.ndarray, now_ns: int) -> None:
        self._batches.append(batch)
        self.rows += len(batch)
        self.trim(now_ns)

    def trim(self, now_ns: int) -> None:
        cutoff = now_ns - self.history_ns
        while self._batches and int(self._batches[0]["t_ns"][-1]) < cutoff:
            self.rows -= len(self._batches.popleft())
        while self.rows > self.max_rows and self._batches:
            head = self._batches[0]
            excess = self.rows - self.max_rows
            if len(head) <= excess:
                self._batches.popleft()
                self.rows -= len(head)
                self.evicted += len(head)
            else:
                self._batches[0] = head[excess:]
                self.rows -= excess
                self.evicted += excess

    def window(self, t0: int, t1: int) -> np.ndarray:
        """Rows with ``t0 <= t_ns <= t1``."""
        return self.slice(t0, t1).rows()

    def slice(self, t0: int, t1: int) -> Slice:
        """The batches holding rows with ``t0 <= t_ns <= t1``, not yet joined."""
        parts = [b for b in self._batches if len(b) and b["t_ns"][-1] >= t0 and b["t_ns"][0] <= t1]
        return Slice(tuple(parts), self.dtype, t0, t1)


def _shown(entity: Entity) -> Entity:
    """``entity`` with every string in its value made safe to show: views draw what the
    model holds, and a target's names are shown there, never obeyed."""
    value = shown_tree(entity.value)
    return entity if value is entity.value else replace(entity, value=value)


class Model:
    """Everything the UI shows, fed by one source."""

    def __init__(
        self, history_s: float = DEFAULT_HISTORY_S, max_rows: int = DEFAULT_MAX_ROWS
    ) -> None:
        self.history_s = history_s
        self.max_rows = max_rows
        self.now_ns = 0
        self.streams: dict[str, History] = {}
        self.entities: dict[str, dict[str, Entity]] = {}
        self.source_drops: dict[str, int] = {}
        self.listeners: list[Callable[[str, np.ndarray], None]] = []
        """Called with every new batch (incremental aggregates, e.g. kernel tables)."""
        self.reset_listeners: list[Callable[[], None]] = []
        self.generation = 0
        """Bumped by every update, so views can skip redrawing unchanged data."""

    def apply(self, update: Update, now_ns: int) -> None:
        if update.reset:
            self.streams.clear()
            self.entities.clear()
            for listener in self.reset_listeners:
                listener()
        self.now_ns = now_ns
        for entity in update.entities:
            self.entities.setdefault(entity.kind, {})[entity.key] = _shown(entity)
        for name, batch in update.batches.items():
            hist = self.streams.get(name)
            if hist is None:
                hist = self.streams[name] = History(batch.dtype, self.history_s, self.max_rows)
            hist.append(batch, now_ns)
            for listener in self.listeners:
                listener(name, batch)
        for hist in self.streams.values():
            hist.trim(now_ns)
        self.generation += 1

    def window(self, stream: str, seconds: float) -> np.ndarray | None:
        """The last ``seconds`` of ``stream``, or None if the stream never appeared."""
        hist = self.streams.get(stream)
        if hist is None:
            return None
        return hist.window(self.now_ns - int(seconds * 1e9), self.now_ns)

    def slice(self, stream: str, seconds: float) -> Slice | None:
        """:meth:`window` not yet joined (for a worker to join), or None likewise."""
        hist = self.streams.get(stream)
        if hist is None:
            return None
        return hist.slice(self.now_ns - int(seconds * 1e9), self.now_ns)

    def latest(self, stream: str, key: str, seconds: float = 5.0) -> dict[int, np.void]:
        """The newest row per value of ``key`` within the last ``seconds``."""
        rows = self.window(stream, seconds)
        out: dict[int, np.void] = {}
        if rows is None:
            return out
        for row in rows:
            out[int(row[key])] = row
        return out

    def entity_values(self, kind: str) -> dict[str, dict[str, Any]]:
        return {key: e.value for key, e in self.entities.get(kind, {}).items()}

    def devices(self) -> list[dict[str, Any]]:
        """GPU descriptions, by index."""
        found = self.entity_values("device").values()
        return sorted(found, key=lambda d: d.get("index", 0))

    def drops(self) -> dict[str, int]:
        """Rows lost anywhere before the views, plus rows the history cap evicted early."""
        out = dict(self.source_drops)
        for name, hist in self.streams.items():
            if hist.evicted:
                out[f"{name} (history cap)"] = hist.evicted
        return out
