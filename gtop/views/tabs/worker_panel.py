"""A base for process-screen tabs whose analysis is too slow for the UI thread.

:meth:`WorkerPanel.show` (UI thread) takes a cheap, immutable snapshot of what the tab
needs (:meth:`snapshot`), runs :meth:`compute` on it in a thread worker, and hands the
result back to :meth:`apply` on the UI thread. At most one computation runs at a time;
a ``show`` that arrives meanwhile is remembered and served when it ends, so work never
piles up however fast data arrives. A tab with no data shows one line saying why
(:meth:`reason`) instead of its widgets.
"""

from __future__ import annotations

import contextlib
from typing import Any

from textual import work
from textual.containers import Vertical
from textual.widgets import Static

from gtop.core.model import Model
from gtop.views.tabs.session_data import session_of


def agent_error_of(app: Any) -> str | None:
    """Why ``app``'s source could not load the agent, if the source knows."""
    meta = getattr(getattr(app, "source", None), "meta", None) or {}
    return meta.get("agent_error")


def is_live(app: Any) -> bool:
    """``app`` shows a live source (not a replay)."""
    return bool(getattr(getattr(app, "source", None), "live", True))


COMPUTING = "computing…"
"""The mark a tab shows until its first result is drawn."""


class WorkerPanel(Vertical):
    """Subclasses compose their widgets after :attr:`note` and implement the hooks."""

    MARK_STALE = True
    """Show :data:`COMPUTING` also while recomputing after a replay seek (the result on
    screen is of another time), not only until the first result."""

    DEFAULT_CSS = """
    WorkerPanel { height: 1fr; }
    WorkerPanel > .panel-note { height: auto; color: $text-muted; padding: 0 1; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.pid = pid
        self.note = Static("", classes="panel-note")
        self.note.display = False
        """One line: why the tab is empty, or what its numbers are (approximate...)."""
        self.busy = False
        """A computation is running on a worker thread."""
        self.computed = 0
        """How many computations have been applied (tests wait on it)."""
        self._model: Model | None = None
        self._again = False
        self._empty = False
        self._marked = False
        """The note shows :data:`COMPUTING` (cleared when the result is drawn)."""
        self._generation = -1
        """The session generation (bumped by a seek) of the computation last started."""
        self._asked = False
        """The user changed what the tab shows: mark the next computation."""

    def agent_error(self) -> str | None:
        """Why the source could not load the agent, if the app's source knows."""
        return agent_error_of(self.app)

    def live(self) -> bool:
        """The app shows a live source (not a replay)."""
        return is_live(self.app)

    # --- hooks ----------------------------------------------------------------------------
    def reason(self, model: Model) -> str | None:
        """One line on why there is nothing to show, or None."""
        return None

    def snapshot(self, model: Model) -> Any:
        """UI thread: gather the (immutable) inputs of :meth:`compute`; keep it cheap."""
        raise NotImplementedError

    def compute(self, snap: Any) -> Any:
        """Worker thread: the slow part. Must not touch widgets or the model."""
        return snap

    def apply(self, result: Any) -> None:
        """UI thread: draw ``result``."""
        raise NotImplementedError

    def set_note(self, text: str) -> None:
        """Show ``text`` in the note line (hidden when empty)."""
        self.note.update(text)
        self.note.display = bool(text)

    def set_empty(self, empty: bool) -> None:
        """Hide the tab's widgets (all but the note) while it has no data."""
        for child in self.children:
            if child is not self.note:
                child.display = not empty
        self._empty = empty

    def settled(self) -> bool:
        """A result has been drawn and no computation is running or due."""
        return bool(self.computed) and not self.busy and not self._again

    def recompute(self) -> None:
        """The user changed what the tab shows (a mode, a view): compute again, with the
        :data:`COMPUTING` mark until the new result is drawn."""
        self._asked = True
        if self._model is not None:
            self.show(self._model)

    # --- plumbing ---------------------------------------------------------------------
    def show(self, model: Model) -> None:
        self._model = model
        why = self.reason(model)
        if why is not None:
            self.set_note(why)
            self._marked = False  # a computation still running must not clear this line
            self.set_empty(True)
            self.computed += 1
            return
        if self._empty:
            self.set_note("")
            self.set_empty(False)
        if self.busy:
            self._again = True
            if self._asked and not self._marked:  # (the running one is of what was shown)
                self.set_note(COMPUTING)
                self._marked = True
            return
        self.busy = True
        generation = session_of(model).generation
        stale = self._asked or (self.MARK_STALE and generation != self._generation)
        self._generation, self._asked = generation, False
        if not self.computed or stale:
            self.set_note(COMPUTING)
            self._marked = True
        # Start the worker once this frame is painted: a worker holding the GIL would
        # otherwise delay the very frame that answers the key that opened the tab.
        self.call_after_refresh(self._run, self.snapshot(model))

    # A description of our own: Textual's default is the repr of the arguments, and the
    # repr of a snapshot (numpy arrays, dicts of stacks) took tens of ms on the UI thread.
    @work(thread=True, exit_on_error=False, group="panel", description="panel analysis")
    def _run(self, snap: Any) -> None:
        try:
            result: Any = self.compute(snap)
        except Exception as exc:  # shown in the note, never raised into the UI
            result = exc
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.app.call_from_thread(self._done, result)

    def _done(self, result: Any) -> None:
        self.busy = False
        if not self.is_mounted:
            return
        if isinstance(result, Exception):
            self.set_note(f"analysis failed: {type(result).__name__}: {result}")
        else:
            if self._marked:
                self.set_note("")
            self.apply(result)
        self._marked = False
        self.computed += 1
        if self._again and self._model is not None:
            self._again = False
            self.show(self._model)
