from __future__ import annotations

import numpy as np

from gtop.core import layouts
from gtop.core.hub import Entity, Hub


def gpu_rows(n: int, t0: int = 0) -> np.ndarray:
    rows = layouts.GPU.empty(n)
    rows["t_ns"] = np.arange(t0, t0 + n)
    return rows


def test_each_subscriber_gets_every_batch_and_a_slow_one_drops_only_its_own() -> None:
    hub = Hub(ring_rows=10)
    fast, slow = hub.subscribe(), hub.subscribe(ring_rows=3)
    hub.publish("gpu", gpu_rows(5))
    assert len(fast.poll().batches["gpu"]) == 5
    hub.publish("gpu", gpu_rows(5, 5))
    assert len(fast.poll().batches["gpu"]) == 5
    assert list(slow.poll().batches["gpu"]["t_ns"]) == [7, 8, 9]
    assert slow.drops() == {"gpu": 7}
    assert fast.drops() == {}


def test_published_batches_are_frozen() -> None:
    hub = Hub()
    sub = hub.subscribe()
    rows = gpu_rows(2)
    hub.publish("gpu", rows)
    assert not sub.poll().batches["gpu"].flags.writeable


def test_late_subscriber_gets_latest_entities_and_unchanged_ones_are_not_resent() -> None:
    hub = Hub()
    early = hub.subscribe()
    hub.publish_entity(Entity("process", "1", 0, {"name": "a"}))
    hub.publish_entity(Entity("process", "1", 1, {"name": "a"}))
    hub.publish_entity(Entity("process", "1", 2, {"name": "b"}))
    assert [e.value["name"] for e in early.poll().entities] == ["a", "b"]
    late = hub.subscribe()
    assert [e.value["name"] for e in late.poll().entities] == ["b"]
