"""A consumer that writes everything a hub publishes into a recording, on its own thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from gtop.core import streams
from gtop.core.hub import Hub, Subscription
from gtop.recordings.writer import RecordingWriter, WriteError

FLUSH_INTERVAL_S = 0.5
"""Commit period: a SIGKILLed recorder loses at most about this much (the target is ≤1 s)."""
CHECKPOINT_INTERVAL_S = 2.0
"""How often committed data is copied from the WAL into the file itself: a copy of the
file made without its ``-wal`` (after a SIGKILL, say) lacks at most these last seconds."""


class Recorder:
    """Subscribes to ``hub`` and writes its batches and entities to ``path``.

    Drops (rows the recorder's queues lost because the disk fell behind, plus drops
    upstream of the hub) are stored in the recording's final metadata. ``sub``: a
    subscription to ``hub`` taken earlier, whose batches since then are recorded too
    (the recorder owns it from here, and unsubscribes it even if the file cannot be made).
    """

    def __init__(
        self,
        hub: Hub,
        path: str | Path,
        meta: dict[str, Any],
        *,
        overwrite: bool = False,
        sub: Subscription | None = None,
        since_ns: int | None = None,
    ) -> None:
        """``since_ns``: the recording's start (CLOCK_MONOTONIC ns): rows that ended before
        it are not written (an agent attached again to a process can hand over records of
        an earlier session: on the H200, 31 of 235 one-second attaches held up to 11 s)."""
        self.hub = hub
        self.since_ns = since_ns
        try:
            self.writer = RecordingWriter(path, meta, overwrite=overwrite)
        except BaseException:
            if sub is not None:
                hub.unsubscribe(sub)
            raise
        self.path = self.writer.path
        self._sub = sub or hub.subscribe()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gtop-recorder", daemon=True)
        self.error: str | None = None
        self.until_ns: int | None = None
        """The recording's end (CLOCK_MONOTONIC ns), once known: rows stamped later (read
        by the collectors' last polls while gtop stops) are not written, so that a
        ``--duration S`` recording covers S seconds, not S plus the stop."""

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def _drain_once(self) -> None:
        update = self._sub.poll()
        for name, batch in update.batches.items():
            batch = self._within(batch)
            if not len(batch):
                continue
            spec = streams.declared().get(name)
            self.writer.append(name, batch, spec.doc if spec else "")
        for entity in update.entities:
            self.writer.add_entity(entity)
        self.writer.flush()

    def _within(self, batch: np.ndarray) -> np.ndarray:
        """The rows of ``batch`` that start by :attr:`until_ns` and end from
        :attr:`since_ns` on (all of them for a stream without times)."""
        names = batch.dtype.names or ()
        if "t_ns" not in names:
            return batch
        keep = np.ones(len(batch), bool)
        if self.until_ns is not None:
            keep &= batch["t_ns"] <= self.until_ns
        if self.since_ns is not None:  # by its end; an unknown end (-1) by its start
            ends = (
                np.maximum(batch["end_ns"], batch["t_ns"]) if "end_ns" in names else batch["t_ns"]
            )
            keep &= ends >= self.since_ns
        return batch if keep.all() else batch[keep]

    def _run(self) -> None:
        checkpointed = time.monotonic()
        try:
            while not self._stop.wait(FLUSH_INTERVAL_S):
                self._drain_once()
                if time.monotonic() - checkpointed >= CHECKPOINT_INTERVAL_S:
                    self.writer.checkpoint()
                    checkpointed = time.monotonic()
        except Exception as exc:  # disk full, file removed: stop recording, keep the app
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        self.writer.abandon()
        self.error = (
            f"recording stopped: {exc}; {self.path} keeps the {self.rows()} rows committed before"
        )

    def rows(self) -> int:
        return sum(self.writer.rows_written.values())

    def drops(self) -> dict[str, int]:
        out = dict(self.hub.source_drops)
        for name, n in self._sub.drops().items():
            out[name] = out.get(name, 0) + n
        return out

    def stop(self, final_meta: dict[str, Any] | None = None, until_ns: int | None = None) -> Path:
        """Stop, write what is queued, and finalise the file. Safe to call twice.

        ``until_ns``: the recording's end, if not set already (:attr:`until_ns`).
        """
        if until_ns is not None and self.until_ns is None:
            self.until_ns = until_ns
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.hub.unsubscribe(self._sub)
        if not self.writer.closed:
            try:
                self._drain_once()
                self.writer.close({"drops": self.drops(), **(final_meta or {})})
            except WriteError as exc:
                self._failed(exc)
        return self.path
