"""Bounded queues of record batches with drop counters.

A :class:`Ring` sits between one producer thread and one consumer. It holds whole numpy
batches (no per-event Python objects) up to a row budget; when a push would exceed the
budget the *oldest* rows are dropped and counted, so a slow consumer never blocks a
producer and never loses data silently.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np


class Ring:
    """A bounded FIFO of record batches of one dtype.

    Args:
        dtype: the record layout of every batch.
        capacity: the most rows held at once; older rows are dropped beyond it.
    """

    def __init__(self, dtype: np.dtype, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.dtype = np.dtype(dtype)
        self.capacity = capacity
        self._batches: deque[np.ndarray] = deque()
        self._rows = 0
        self._lock = threading.Lock()
        self.pushed = 0
        """Rows pushed in total."""
        self.dropped = 0
        """Rows dropped because the consumer fell behind."""

    def __len__(self) -> int:
        return self._rows

    def push(self, batch: np.ndarray) -> int:
        """Queue ``batch`` (not copied: the producer must not change it afterwards).

        Returns:
            how many rows were dropped to make room.
        """
        if batch.dtype != self.dtype:
            raise TypeError(f"batch dtype {batch.dtype} does not match ring dtype {self.dtype}")
        n = len(batch)
        if n == 0:
            return 0
        with self._lock:
            self.pushed += n
            if n >= self.capacity:
                dropped = self._rows + n - self.capacity
                self._batches.clear()
                self._batches.append(batch[n - self.capacity :])
                self._rows = self.capacity
                self.dropped += dropped
                return dropped
            self._batches.append(batch)
            self._rows += n
            dropped = 0
            while self._rows > self.capacity:
                excess = self._rows - self.capacity
                head = self._batches[0]
                if len(head) <= excess:
                    self._batches.popleft()
                    self._rows -= len(head)
                    dropped += len(head)
                else:
                    self._batches[0] = head[excess:]
                    self._rows -= excess
                    dropped += excess
            self.dropped += dropped
            return dropped

    def drain(self) -> np.ndarray:
        """Take every queued row, oldest first, as one array (possibly empty)."""
        with self._lock:
            batches = list(self._batches)
            self._batches.clear()
            self._rows = 0
        if not batches:
            return np.empty(0, dtype=self.dtype)
        if len(batches) == 1:
            return batches[0]
        return np.concatenate(batches)
