"""What every gtop screen shares: body, replay time bar, status line and footer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen

from gtop.core.model import Model
from gtop.views.widgets.key_hints import KeyHints
from gtop.views.widgets.status_line import Status, StatusLine
from gtop.views.widgets.time_bar import Playback, TimeBar


class GtopScreen(Screen):
    """A screen drawn from ``model``; subclasses compose the body and implement ``show``.

    The app calls :meth:`show` when the model changed and :meth:`show_chrome` on every
    tick; the screen redraws itself when it becomes current again.
    """

    def __init__(self, model: Model, *, replay: bool) -> None:
        super().__init__()
        self.model = model
        self.replay = replay
        self.status_line = StatusLine()
        self.time_bar = TimeBar() if replay else None

    def compose(self) -> ComposeResult:
        yield from self.compose_body()
        if self.time_bar is not None:
            yield self.time_bar
        yield self.status_line
        yield KeyHints()

    def compose_body(self) -> ComposeResult:
        raise NotImplementedError

    def show(self, model: Model) -> None:
        raise NotImplementedError

    def about(self) -> str:
        """What the screen shows and how to read it (the ``?`` screen's first lines)."""
        return ""

    def ready(self) -> bool:
        """Everything the last :meth:`show` started is on screen: widgets it mounted are
        mounted, work it started has been drawn (tests wait on this, never on time)."""
        return True

    def show_chrome(self, status: Status, playback: Playback | None) -> None:
        self.status_line.status = status
        if self.time_bar is not None:
            self.time_bar.playback = playback

    def on_screen_resume(self) -> None:
        # Back from a dialog (help, legend) with the same model: what is drawn is still
        # true, and redrawing restarted every tab's analysis (seconds on a busy recording).
        if getattr(self.app, "shown", None) != (self.model.generation, self):
            self.show(self.model)
