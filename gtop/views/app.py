"""The gtop terminal UI over any :class:`~gtop.core.source.Source`, live or replayed.

A timer polls the source on the UI thread (``poll`` never blocks), applies the update to
the :class:`~gtop.core.model.Model`, and redraws the current screen only when the
model's ``generation`` changed. The one slow operation, starting or finalising a
recording, runs in a thread worker.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
from collections.abc import Hashable
from pathlib import Path
from typing import Any, Protocol, cast

from textual import work
from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.theme import BUILTIN_THEMES
from textual.widgets import Input

from gtop.analysis.kernels import kernel_labels
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.analysis.report.agent_cost import combined, cost_line
from gtop.analysis.window.active_window import Window
from gtop.core.hub import Update
from gtop.core.model import Model
from gtop.core.safe_text import shown
from gtop.core.source import Controls, Source
from gtop.session.live import default_recording_path
from gtop.session.replay import SPEEDS
from gtop.views.commands import Command, GtopCommands
from gtop.views.processes import COLUMNS, process_rows
from gtop.views.screens.base import GtopScreen
from gtop.views.screens.compare import CompareScreen
from gtop.views.screens.help import HelpScreen, keys_of
from gtop.views.screens.legend import LegendScreen
from gtop.views.screens.overview import OverviewScreen
from gtop.views.screens.process import ProcessScreen
from gtop.views.tabs.kernels_tab import KernelsTab
from gtop.views.tabs.session_data import SessionData, aggregated, session_of
from gtop.views.widgets.process_table import ProcessTable
from gtop.views.widgets.status_line import Status
from gtop.views.widgets.time_bar import Playback, TimeBar


class Replayable(Protocol):
    """The controls of a replayed source (:class:`~gtop.session.replay.ReplaySource`)."""

    speed: float
    paused: bool
    t_start: int
    t_end: int
    playhead: int
    meta: dict[str, Any]

    @property
    def position_s(self) -> float: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def at_end(self) -> bool: ...
    def toggle_pause(self) -> None: ...
    def faster(self) -> None: ...
    def slower(self) -> None: ...
    def seek(self, t_ns: int) -> None: ...
    def step(self, seconds: float) -> None: ...
    @property
    def window(self) -> Window: ...
    @property
    def at_window(self) -> bool: ...
    @property
    def active(self) -> Window: ...
    def to_window(self) -> None: ...
    @property
    def seek_pending(self) -> bool: ...


REPLAY_ACTIONS = frozenset(
    {"step", "seek", "seek_edge", "slower", "faster", "seek_fraction", "window"}
)
SEEK_S = 5.0
"""How far ←/→ move in a replay."""


class GtopApp(App[int]):
    """gtop's UI.

    Args:
        source: where data comes from; started on mount and stopped on exit.
        no_color: no colours at all (as with ``NO_COLOR``); shapes and words still read.
        refresh_s: how often the source is polled and the screen may redraw.
        start_pid: open this process's screen first (Esc goes to the overview).
        compare: a second recording to compare a replayed one with (opens first; ``c``).
    """

    TITLE = "gtop"
    COMMANDS = App.COMMANDS | {GtopCommands}

    BINDINGS = [
        # One key map: the replay keys are priority bindings, so they work on every tab
        # whatever is focused (tabs zoom and scroll with other keys); check_action lets
        # them through to a text box being typed in, and to a dialog on top.
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("l", "legend", "Legend"),
        Binding("space", "pause", "Pause", priority=True),
        Binding("R", "record", "Record"),
        Binding("c", "compare", "Compare"),
        Binding("comma", "step(-1)", "Back one sample", show=False, priority=True),
        Binding("full_stop", "step(1)", "Forward one sample", show=False, priority=True),
        Binding("left", "seek(-1)", "Back 5 s", show=False, priority=True),
        Binding("right", "seek(1)", "Forward 5 s", show=False, priority=True),
        Binding("home", "seek_edge(0)", "To the start", show=False, priority=True),
        Binding("end", "seek_edge(1)", "To the end", show=False, priority=True),
        Binding("w", "window", "Steady window / back", show=False, priority=True),
        Binding("minus", "slower", "Slower replay", show=False, priority=True),
        Binding("plus,equals_sign", "faster", "Faster replay", show=False, priority=True),
    ]

    def __init__(
        self,
        source: Source,
        *,
        no_color: bool = False,
        refresh_s: float = 0.5,
        start_pid: int | None = None,
        compare: Path | None = None,
    ) -> None:
        if no_color:
            os.environ["NO_COLOR"] = "1"  # Textual reads it in App.__init__
        super().__init__()
        self.animation_level = "none"
        """No sliding underlines or smooth scrolls: over SSH they cost frames, and a key
        is answered when its content shows, not when an animation ends."""
        self.source = source
        self.replay = None if source.live else cast(Replayable, source)
        """The replay controls, or None when live."""
        self.controls = source.controls
        """The live session's controls (probes, recording), or None in a replay."""
        self.model = Model()
        data = session_of(self.model)  # the process tabs' aggregates start with the session
        if self.replay is not None:  # the tabs cover the report's window there
            data.hold(self.replay.window.duration_ns)
        self.before_window: int | None = None
        """Where a replay stood before ``w`` took it to the report's window."""
        self.refresh_s = refresh_s
        self.start_pid = start_pid
        recording = getattr(getattr(source, "recording", None), "path", None)
        self.compare = (Path(recording), compare) if recording and compare else None
        """A replay's recording and the one ``--compare`` named (``c`` shows both)."""
        self.display_paused = False
        """Live only: keep collecting but stop redrawing."""
        self.recording_busy = False
        """A recording is being started or finalised (R is greyed meanwhile)."""
        self.polling = False
        """A replay poll runs on a worker (:meth:`tick`)."""
        self.loading = False
        """A replay seek's history is being read (the time bar says "computing…")."""
        self.shown: tuple[int, GtopScreen] | None = None
        """The model generation and screen last drawn (None: redraw at the next tick)."""
        self.sub_title = shown(source.title)

    # --- lifecycle ----------------------------------------------------------------------

    def get_default_screen(self) -> OverviewScreen:
        return OverviewScreen(
            self.model,
            replay=not self.source.live,
            no_gpu_reason=self.source.meta.get("nvml_error"),
        )

    def on_mount(self) -> None:
        self.source.start()
        self.call_after_refresh(self.tick)
        self.set_interval(self.refresh_s, self.tick)
        if self.start_pid is not None:
            self.open_process(self.start_pid)
        if self.compare is not None:
            self.action_compare()

    def on_unmount(self) -> None:
        self.source.stop()
        gc.unfreeze()  # what _apply froze is collectable again (a process that goes on:
        gc.collect()  # tests, benchmarks), collected now rather than in another app's frame

    def tick(self) -> None:
        """Poll the source, apply, redraw what changed. A replay, once loaded, is polled
        on a worker (a seek decodes the history before the new position: seconds on a
        CUPTI recording), then applied here; meanwhile only the chrome is redrawn."""
        if self.replay is not None and self.model.generation > 0:  # the first load: here
            if not self.polling:
                self.polling = True
                self._poll_replay()
            self._draw()
            return
        update = self.source.poll()
        self._apply(update, first_load=update.reset and self.replay is not None)

    def _token(self, span_ns: int) -> Hashable | None:
        """What a replay's last seek read, for aggregates holding ``span_ns``
        (:attr:`~gtop.views.tabs.session_data.SessionData.token`)."""
        loaded = getattr(self.source, "loaded", None)
        return None if loaded is None else (loaded, span_ns)

    @work(thread=True, exit_on_error=False, group="poll")
    def _poll_replay(self) -> None:
        update: Update | None = None
        fresh: SessionData | None = None
        token: Hashable | None = None
        try:
            update = self.source.poll()
            if update.reset and not self._obsolete(update):
                # a seek: aggregate its history here, not on the UI thread
                data = session_of(self.model)
                token = self._token(data.span_ns)
                now = self.source.now_ns()  # (reusable: checked again when taken)
                fresh = (
                    data if data.reusable(token) else aggregated(update, now, data.span_ns, token)
                )
        finally:  # a failed poll still frees the next one
            with contextlib.suppress(RuntimeError):  # the app is shutting down
                self.call_from_thread(self._polled, update, fresh, token)

    def _polled(
        self, update: Update | None, fresh: SessionData | None, token: Hashable | None
    ) -> None:
        self.polling = False
        if update is not None and self._obsolete(update):
            return  # (still loading: the next tick reads where the newest seek went)
        if update is None or update.reset:
            self.loading = False
        if update is not None:
            with session_of(self.model).taking(fresh, token):
                self._apply(update)

    def _obsolete(self, update: Update) -> bool:
        """``update`` is a seek's read, and another seek came since: neither aggregated
        nor shown (→ → → read and analysed the first two windows before the third)."""
        return update.reset and self.replay is not None and self.replay.seek_pending

    def _apply(self, update: Update, first_load: bool = False) -> None:
        """Apply ``update`` to the model and draw; ``first_load``: a replay's first read,
        whose token is set before the draw (the verdict line's first computation, keyed
        by it, is then found again by GPU time and by a seek back)."""
        if update.reset or update.batches or update.entities:
            first = self.model.generation == 0
            self.model.apply(update, self.source.now_ns())
            if first:
                # What exists now (Textual, the screens, the first data) lives as long as
                # the app: a full collection that walks it all took 60-80 ms of a frame.
                gc.freeze()
        if first_load:
            data = session_of(self.model)
            data.token = self._token(data.span_ns)
        self._draw()

    def _draw(self) -> None:
        screen = self.screen_stack[-1] if self.screen_stack else None
        if not isinstance(screen, GtopScreen) or not screen.is_mounted:
            return
        if not self.display_paused and self.shown != (self.model.generation, screen):
            self.shown = (self.model.generation, screen)
            screen.show(self.model)
        screen.show_chrome(self.status(), self.playback())

    def status(self) -> Status:
        recorder = self.controls.recorder if self.controls else None
        trouble = []
        for st in self.source.statuses():
            if st.error_count:
                trouble.append(f"{st.name}: {st.error_count} errors ({st.last_error})")
            elif not st.ok:
                trouble.append(f"{st.name}: {st.detail}")
            elif st.lagging:
                trouble.append(f"{st.name}: {st.late_polls} of {st.polls} polls late")
        if recorder is not None and recorder.error:
            trouble.append(recorder.error)
        paused = self.replay.paused if self.replay else self.display_paused
        return Status(
            live=self.source.live,
            title=shown(self.source.title),
            paused=paused,
            recording=f"{recorder.path.name} {recorder.rows():,} rows" if recorder else None,
            drops={**self.source.drops(), **self.model.drops()},
            trouble=tuple(shown(line) for line in trouble),  # errors can quote a target
            cost=self._cost(),
        )

    def _cost(self) -> str | None:
        """gtop's cost to the traced processes (live or replayed ``agent_cost``)."""
        costs = self.model.entities.get("agent_cost", {}).values()
        total = combined(e.value for e in costs)
        return cost_line(total) if total is not None else None

    def playback(self) -> Playback | None:
        rp = self.replay
        if rp is None:
            return None
        w = rp.window
        mark = None
        if w.kind != "recording" and rp.t_end > rp.t_start:
            mark = (
                max(0.0, (w.t0 - rp.t_start) / (rp.t_end - rp.t_start)),
                min(1.0, (w.t1 - rp.t_start) / (rp.t_end - rp.t_start)),
            )
        return Playback(
            rp.position_s,
            rp.duration_s,
            rp.speed,
            rp.paused,
            rp.at_end,
            loading=self.loading,
            window=mark,
            at_window=rp.at_window,
        )

    def redraw(self) -> None:
        """Apply what the source has now and redraw (after a control changed state). Live,
        the screen redraws from the model; a replay's controls change only the chrome,
        and the model, after a seek, once the poll worker has read it."""
        if self.replay is None:
            self.shown = None
        self.tick()

    def _seeked(self) -> None:
        """A replay moved its playhead: say so until the new history is in."""
        self.loading = True
        self.redraw()

    # --- navigation ---------------------------------------------------------------------

    def open_process(self, pid: int) -> None:
        self.push_screen(ProcessScreen(self.model, pid, replay=not self.source.live))

    def on_process_table_chosen(self, message: ProcessTable.Chosen) -> None:
        self.open_process(message.pid)

    def on_time_bar_seek(self, message: TimeBar.Seek) -> None:
        self.action_seek_fraction(message.fraction)

    def action_help(self) -> None:
        screen = self.screen
        about = screen.about() if isinstance(screen, GtopScreen) else ""
        self.push_screen(HelpScreen(keys_of(screen.active_bindings, self.get_key_display), about))

    def action_compare(self) -> None:
        """Show the two recordings' breakdowns side by side (``--compare``)."""
        if self.compare is not None:
            self.push_screen(CompareScreen(*self.compare))

    def action_legend(self) -> None:
        self.push_screen(LegendScreen())

    # --- controls -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # (no screen while the app shuts down: the footer may still ask)
        top = self.screen_stack[-1] if self.screen_stack else None
        typing = isinstance(top, ModalScreen) or isinstance(getattr(top, "focused", None), Input)
        if action in REPLAY_ACTIONS:
            return self.replay is not None and not typing
        if action == "pause":
            return not typing
        if action == "compare":
            return self.compare is not None
        if action == "record":  # hidden in a replay, greyed while a recording starts/stops
            return False if self.controls is None else (None if self.recording_busy else True)
        return True

    def action_pause(self) -> None:
        """Live: freeze the display (collection goes on). Replay: pause playback."""
        if self.replay is None:
            self.display_paused = not self.display_paused
        else:
            self.replay.toggle_pause()
        self.redraw()

    def action_step(self, direction: int) -> None:
        """Move one sampling interval back or forward (and pause there)."""
        rp = self._replay()
        rp.paused = True
        rp.step(direction * float(rp.meta.get("interval_s") or 0.5))
        self._seeked()

    def action_seek(self, direction: int) -> None:
        self._replay().step(direction * SEEK_S)
        self._seeked()

    def action_seek_edge(self, end: int) -> None:
        rp = self._replay()
        rp.seek(rp.t_end if end else rp.t_start)
        self._seeked()

    def action_seek_fraction(self, fraction: float) -> None:
        rp = self._replay()
        rp.seek(rp.t_start + int(fraction * (rp.t_end - rp.t_start)))
        self._seeked()

    def action_window(self) -> None:
        """To the end of the report's window (the tabs then cover it, paused there), or
        back to where the replay stood before."""
        rp = self._replay()
        if rp.at_window and self.before_window is not None:
            rp.seek(self.before_window)
            self.before_window = None
        else:
            self.before_window = None if rp.at_window else rp.playhead
            rp.to_window()
        self._seeked()

    def action_slower(self) -> None:
        self._replay().slower()
        self.redraw()

    def action_faster(self) -> None:
        self._replay().faster()
        self.redraw()

    def _process_commands(self, screen: ProcessScreen) -> list[Command]:
        cmds = [
            Command(f"Open tab: {title}", about, lambda t=title: screen.open_tab(t))
            for title, about in screen.tab_titles()
        ]
        return cmds + _kernel_commands(screen, self.model)

    def _set_speed(self, speed: float) -> None:
        self._replay().speed = speed
        self.redraw()

    def _replay(self) -> Replayable:
        """The replay controls (replay actions are disabled when live, via check_action).

        Raises:
            SkipAction: the source is live.
        """
        if self.replay is None:
            raise SkipAction()
        return self.replay

    def action_record(self) -> None:
        """Start recording to ``gtop-<host>-<pid>-<time>.gtop`` in the current directory,
        or stop and finalise the recording."""
        if self.controls is None:
            return
        self.recording_busy = True
        self.refresh_bindings()
        self._toggle_recording(self.controls)

    @work(thread=True, exclusive=True, group="recording")
    def _toggle_recording(self, src: Controls) -> None:
        """Runs on a worker thread: opening or finalising the file touches the disk."""
        severity: SeverityLevel = "information"
        try:
            if src.recorder is None:
                path = src.start_recording(default_recording_path(src.pid)).path
                message = f"recording to {path}"
            else:
                rows = src.recorder.rows()
                message = f"recorded {rows:,} rows to {src.stop_recording()}"
        except (OSError, RuntimeError, sqlite3.Error) as exc:
            message, severity = f"recording failed: {exc}", "error"
        self.call_from_thread(self._recording_toggled, message, severity)

    def _recording_toggled(self, message: str, severity: SeverityLevel) -> None:
        self.recording_busy = False
        self.refresh_bindings()
        self.notify(message, severity=severity)
        self.redraw()

    # --- command palette ----------------------------------------------------------------

    def palette_commands(self, screen: Screen) -> list[Command]:
        """Commands for the palette opened over ``screen``, in the current state."""
        cmds = [Command("Show keys", "every key and what it does", self.action_help)]
        if isinstance(screen, OverviewScreen):
            table = screen.table
            for col in COLUMNS:
                cmds.append(
                    Command(
                        f"Sort processes by {col.label}",
                        "s cycles columns, S reverses",
                        lambda key=col.key: setattr(table, "sort_key", key),
                    )
                )
            cmds.append(
                Command("Filter processes", "by command, user or pid (/)", screen.action_filter)
            )
        if isinstance(screen, ProcessScreen):
            cmds += self._process_commands(screen)
        if self.controls is not None:
            rec = "Stop recording" if self.controls.recorder else "Start recording"
            cmds.append(Command(rec, "R", self.action_record))
        if self.replay is None:
            cmds.append(Command("Pause / resume display", "space", self.action_pause))
        else:
            cmds.append(Command("Play / pause replay", "space", self.action_pause))
            cmds.append(Command("Seek to start", "home", lambda: self.action_seek_edge(0)))
            cmds.append(Command("Seek to end", "end", lambda: self.action_seek_edge(1)))
            cmds.append(
                Command("Steady window", "the window gtop report covers (w)", self.action_window)
            )
            for frac in (0.25, 0.5, 0.75):
                cmds.append(
                    Command(
                        f"Seek to {frac:.0%}",
                        "of the recording",
                        lambda f=frac: self.action_seek_fraction(f),
                    )
                )
            for speed in SPEEDS:
                cmds.append(
                    Command(
                        f"Replay speed ×{speed:g}",
                        "- and + step",
                        lambda s=speed: self._set_speed(s),
                    )
                )
        for row in process_rows(self.model):
            cmds.append(
                Command(
                    f"Go to process {row.pid} {row.short_command[:50]}",
                    row.user,
                    lambda p=row.pid: self.open_process(p),
                )
            )
        return cmds


def theme_names() -> list[str]:
    """Textual's built-in colour themes, the names ``--theme`` takes."""
    return sorted(BUILTIN_THEMES)


def _kernel_commands(screen: ProcessScreen, model: Model) -> list[Command]:
    """One palette command per kernel of the screen's process: open it in the table."""
    data = session_of(model)
    stats = data.kernels.get(screen.pid)
    if stats is None:
        return []
    names = names_from_entities(model.entities.get("kernel_name", {}).values())
    rows = stats.rows(names)
    shown = kernel_labels.labels({r.name for r in rows} | set(names.values()))
    total = sum(r.total_ns for r in rows) or 1

    def select(name: str) -> None:
        tab = screen.open_tab("Kernels")
        if isinstance(tab, KernelsTab):
            tab.select_kernel(name)

    return [
        Command(
            f"Kernel: {shown[r.name]}",
            f"{100 * r.total_ns / total:.1f}% of GPU time, {r.count:,} launches",
            lambda n=r.name: select(n),
        )
        for r in rows
    ]


def run_app(source: Source, theme: str | None = None, **kw: Any) -> int:
    """Run the UI until the user quits; returns the exit status (0).

    ``theme``: one of :func:`theme_names` (default: Textual's own). Other keyword
    arguments are those of :class:`GtopApp`.
    """
    app = GtopApp(source, **kw)
    if theme is not None:
        app.theme = theme
    app.run()
    return app.return_code or 0
