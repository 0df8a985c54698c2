"""What a source of data reports about itself: one type for every collector, the agent
link and a replayed file, shown by the status line and ``gtop doctor``.

Errors travel here as data (counted by kind, the last one kept), never as exceptions
escaping a collector's thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Status:
    """A collector's health and counters."""

    name: str
    ok: bool = True
    """False when the source could not start or has stopped working."""
    detail: str = ""
    """One line for the user: what the source is doing, or why it is not."""
    polls: int = 0
    late_polls: int = 0
    """Polls that started more than one period late (the collector could not keep up)."""
    errors: dict[str, int] = field(default_factory=dict)
    """Failures by kind (an exception's type name, or a named refusal such as ``uprobe``)."""
    last_error: str = ""
    unsupported: list[str] = field(default_factory=list)
    """Queries this machine does not support (asked once, then skipped)."""
    counters: dict[str, object] = field(default_factory=dict)
    """Source-specific counts and settings (e.g. a thread tier's ``mode`` or ``py_carried``)."""

    def count_error(self, kind: str, message: str = "") -> None:
        """Count one failure of ``kind``; ``message`` (if any) becomes :attr:`last_error`."""
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if message:
            self.last_error = message

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def lagging(self) -> bool:
        """More than one poll in ten started late: the source cannot keep up (shown)."""
        return self.polls >= 10 and self.late_polls * 10 > self.polls


@dataclass
class ThreadStatus(Status):
    """A host-thread tier's status: what it traced and what it lost."""

    intervals: int = 0
    samples: int = 0
    lost_events: int = 0
    stack_errors: int = 0
