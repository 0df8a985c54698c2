"""Fan-out of live data from producers to consumers.

Producers (collector threads, the agent link) publish record batches and *entities*;
every consumer (the UI model, a recorder) holds a :class:`Subscription` with one bounded
:class:`~gtop.core.ring.Ring` per stream, so a slow consumer drops its own rows (and
counts them) without slowing the producers or the other consumers.

Entities are small descriptive facts keyed by ``(kind, key)``, e.g. a process's command
line or a GPU's name. They change rarely; the hub keeps the latest of each so that a
consumer that subscribes late (a recording started from the UI) starts complete.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gtop.core import streams
from gtop.core.ring import Ring

DEFAULT_RING_ROWS = 1 << 20
MAX_PENDING_ENTITIES = 100_000
MAX_KNOWN_ENTITIES = 200_000


@dataclass(frozen=True)
class Entity:
    """A descriptive fact: ``value`` describes ``(kind, key)`` from time ``t_ns`` on."""

    kind: str
    key: str
    t_ns: int
    value: dict[str, Any]


@dataclass
class Update:
    """What a consumer receives in one poll."""

    batches: dict[str, np.ndarray] = field(default_factory=dict)
    entities: list[Entity] = field(default_factory=list)
    reset: bool = False
    """True when the consumer must forget what it holds first (a replay seek)."""

    def rows(self) -> int:
        return sum(len(b) for b in self.batches.values())


class Subscription:
    """One consumer's queues."""

    def __init__(self, ring_rows: int) -> None:
        self._ring_rows = ring_rows
        self._rings: dict[str, Ring] = {}
        self._entities: deque[Entity] = deque()
        self._lock = threading.Lock()
        self.entities_dropped = 0

    def _ring(self, stream: str, dtype: np.dtype) -> Ring:
        ring = self._rings.get(stream)
        if ring is None:
            with self._lock:
                ring = self._rings.setdefault(stream, Ring(dtype, self._ring_rows))
        return ring

    def _push_entity(self, entity: Entity) -> None:
        with self._lock:
            if len(self._entities) >= MAX_PENDING_ENTITIES:
                self._entities.popleft()
                self.entities_dropped += 1
            self._entities.append(entity)

    def poll(self) -> Update:
        """Take everything queued since the last poll. Never blocks on producers."""
        with self._lock:
            entities = list(self._entities)
            self._entities.clear()
            rings = list(self._rings.items())
        batches = {}
        for name, ring in rings:
            rows = ring.drain()
            if len(rows):
                batches[name] = rows
        return Update(batches=batches, entities=entities)

    def drops(self) -> dict[str, int]:
        """Rows dropped per stream because this consumer fell behind."""
        out = {name: ring.dropped for name, ring in self._rings.items() if ring.dropped}
        if self.entities_dropped:
            out["entities"] = self.entities_dropped
        return out


class Hub:
    """Publish/subscribe for live record batches and entities."""

    def __init__(self, ring_rows: int = DEFAULT_RING_ROWS) -> None:
        self._ring_rows = ring_rows
        self._subs: list[Subscription] = []
        self._known: dict[tuple[str, str], Entity] = {}
        self._lock = threading.Lock()
        self.source_drops: dict[str, int] = {}
        """Rows lost before reaching the hub (e.g. inside the agent), per stream."""

    def subscribe(self, ring_rows: int | None = None) -> Subscription:
        """A new consumer; it first receives the latest value of every known entity."""
        sub = Subscription(ring_rows or self._ring_rows)
        with self._lock:
            for entity in self._known.values():
                sub._push_entity(entity)
            self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def publish(self, stream: str, batch: np.ndarray) -> None:
        """Send a batch of a declared stream to every subscriber (the batch is frozen)."""
        spec = streams.get(stream)
        if batch.dtype != spec.dtype:
            raise TypeError(f"{stream}: batch dtype does not match the declared layout")
        if not len(batch):
            return
        batch.flags.writeable = False
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            sub._ring(stream, spec.dtype).push(batch)

    def publish_entity(self, entity: Entity) -> None:
        """Send an entity to every subscriber, unless it is unchanged."""
        ident = (entity.kind, entity.key)
        with self._lock:
            old = self._known.get(ident)
            if old is not None and old.value == entity.value:
                return
            if old is None and len(self._known) >= MAX_KNOWN_ENTITIES:
                self.source_drops["entities"] = self.source_drops.get("entities", 0) + 1
                return
            self._known[ident] = entity
            subs = list(self._subs)
        for sub in subs:
            sub._push_entity(entity)

    def count_source_drops(self, stream: str, rows: int) -> None:
        """Record rows lost upstream of the hub so that consumers can show them."""
        if rows:
            with self._lock:
                self.source_drops[stream] = self.source_drops.get(stream, 0) + rows
