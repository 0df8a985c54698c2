"""The one interface views get their data through: a live session or a replayed file."""

from __future__ import annotations

from typing import Any, Protocol

from gtop.collectors.base import CollectorStatus
from gtop.pipeline.hub import Update


class Source(Protocol):
    """Something that feeds a :class:`~gtop.pipeline.model.Model`.

    ``poll`` never blocks on data collection: it returns what arrived since the last
    call (live) or what the playhead passed (replay).
    """

    live: bool
    title: str
    meta: dict[str, Any]

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def poll(self) -> Update: ...

    def now_ns(self) -> int: ...

    def drops(self) -> dict[str, int]: ...

    def statuses(self) -> list[CollectorStatus]: ...
