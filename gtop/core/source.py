"""The one interface views get their data through: a live session or a replayed file,
and the typed controls a live session takes (probes, recording)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from gtop.core.hub import Update
from gtop.core.status import Status


class RecordingHandle(Protocol):
    """A recording in progress."""

    path: Path
    error: str | None
    """Why the recorder stopped writing (e.g. a full disk), or None."""

    def rows(self) -> int: ...


class Controls(Protocol):
    """What the UI may ask of a live session. A replayed source has none."""

    pid: int | None
    recorder: RecordingHandle | None

    def can_probe(self) -> bool:
        """Whether probe requests can reach an agent in this session."""
        ...

    def set_probe(
        self, pid: int, kernel: str, probe: str, every: int = 0, on: bool = True
    ) -> str | None:
        """Turn ``probe`` on or off for ``kernel`` in ``pid``, for 1 launch in ``every``
        (1: every launch; 0: as many as the probe's cost budget allows): None when the
        request was sent (the answer arrives as a ``probe_control`` entity), else the
        refusal."""
        ...

    def set_kinds(self, pid: int, kinds: list[str]) -> str | None:
        """Change what ``pid``'s agent traces (:mod:`gtop.agent.modes` kinds), live: None
        when the request was sent (the agent's new kinds arrive in its ``agent``
        entity), else the reason it was not."""
        ...

    def start_recording(self, path: Path) -> RecordingHandle:
        """Record everything from now on to ``path``.

        Raises:
            OSError: the file cannot be created.
        """
        ...

    def stop_recording(self) -> Path | None:
        """Stop and finalise the recording; its path, or None when none was running."""
        ...


@runtime_checkable
class HasControls(Protocol):
    """Something (the app) that holds a session's controls."""

    controls: Controls | None


class Source(Protocol):
    """Something that feeds a :class:`~gtop.core.model.Model`.

    ``poll`` never blocks on data collection: it returns what arrived since the last
    call (live) or what the playhead passed (replay).
    """

    live: bool
    title: str
    meta: dict[str, Any]
    controls: Controls | None
    """The live session's controls; None for a replay."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def poll(self) -> Update: ...

    def now_ns(self) -> int: ...

    def drops(self) -> dict[str, int]: ...

    def statuses(self) -> list[Status]: ...
