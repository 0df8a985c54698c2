"""The verdict line above the process screen's tabs (issue 13): why this process's GPU
was idle over the window of :func:`~gtop.views.tabs.session_data.tab_window` (in a replay
opened at the report's window, that window: the report's verdict), named at the line's
start, in plain words, with its main evidence and the usual fix.

The same rule as ``gtop report``'s verdict (:func:`gtop.analysis.diagnosis.verdict.from_entry`), on
the breakdown the GPU time tab computes (:func:`~gtop.views.tabs.gpu_time_tab.gpu_time`),
so live, attached, launched and replayed sessions give the same answer for the same
records. It recomputes at most every :data:`EVERY_S` seconds, on a worker thread.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from rich.cells import cell_len
from textual import work
from textual.app import ComposeResult
from textual.timer import Timer
from textual.widgets import Static

from gtop.analysis.attribution.causes import LABELS, PHRASES
from gtop.analysis.attribution.records import OP_KERNEL
from gtop.analysis.diagnosis.gains import Prediction
from gtop.analysis.diagnosis.verdict import Verdict, from_entry
from gtop.analysis.report.gpu_report import after_syncs, top_off_stacks, top_sync_stacks
from gtop.core.model import Model
from gtop.views.tabs.gpu_time_tab import gpu_time, shared, summary, take_snapshot
from gtop.views.tabs.session_data import session_of, tab_window
from gtop.views.tabs.verdict_gains import PENDING, GainsJob, best
from gtop.views.tabs.worker_panel import COMPUTING, WorkerPanel

EVERY_S = 2.0
"""Seconds between two computations (the breakdown of a busy window takes a while)."""
STACKS = 10


def window_verdict(snap: Any, pid: int) -> Verdict | None:
    """The verdict of ``pid`` over the snapshot's window; None without its CUDA activity
    there, unless the window is the report's (the NVML approximation cannot tell a
    process's startup from its idle GPU in a sliding window; the report's window starts
    at the GPU's first busy sample, and the report gives this verdict over it)."""
    result = gpu_time(snap, pid)
    if result is None:
        return None
    if not result.result.exact and (snap.window.kind is None or len(snap.records.ops)):
        return None  # (with CUDA activity of others, NVML's GPU is theirs)
    res = result.result
    entry = summary(snap, res)  # gtop's own time charged to GTOP, never the verdict
    folded = {";".join(path): round(s * 1e9) for path, s in result.folded.items()}
    entry["top_off_gpu_stacks"] = top_off_stacks(folded, STACKS)
    host_ns, waits = after_syncs(res.partition, snap.records.syncs, snap.records.states)
    entry["after_sync_s"] = host_ns / 1e9
    entry["sync_stacks"] = top_sync_stacks(waits, snap.stacks)
    ops = snap.records.ops
    mine = ops[np.isin(ops["pid"], list(snap.family | {pid})) & (ops["kind"] == OP_KERNEL)]
    mine = mine[(mine["t"] >= res.t0) & (mine["t"] < res.t1)]
    return from_entry(entry, len(mine), int((mine["end"] - mine["t"]).sum()))


def short_headline(verdict: Verdict) -> str:
    """The headline without its detail (where in the code, after which call): the kind
    of verdict and its share, for a line too narrow for the whole headline."""
    if verdict.kind in ("gpu-bound", "no-host-data"):
        return verdict.headline
    if verdict.kind == "communication-bound":
        return verdict.headline.split(": ", 1)[0]
    share = f"{verdict.share_of_window:.0%} of the time"
    what = SHORT_WHAT.get(verdict.kind) or PHRASES[LABELS.index(verdict.cause)]
    return f"GPU idle {1 - verdict.gar:.0%}: {what}, {share}"


SHORT_WHAT = {
    "launch-bound": "launch-bound",
    "input-bound": "waiting for input data",
    "sync-bound": "waiting in synchronising calls",
}
"""The short headline's words for the verdicts a cause's plain words do not name (the
others: :data:`~gtop.analysis.attribution.causes.PHRASES`)."""


def line_forms(label: str, verdict: Verdict) -> tuple[str, ...]:
    """The verdict line, longest first: all of it (to which the predicted gain is added
    where it fits), without the fix, and with the short headline; the line shows the
    longest that fits (``v``: all of it)."""
    return (
        f"{label} · {verdict.line()}",
        f"{label} · {verdict.headline}",
        f"{label} · {short_headline(verdict)}",
    )


class VerdictLine(WorkerPanel):
    """One line: the verdict for ``pid`` (or why there is none yet)."""

    MARK_STALE = False  # a second line would shift the tabs: the line itself says it

    DEFAULT_CSS = """
    VerdictLine { height: auto; }
    VerdictLine > .verdict {
        height: 1;
        padding: 0 1;
        text-style: bold;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.text = Static("", classes="verdict")
        self.verdict: Verdict | None = None
        """The latest verdict shown (None: none yet)."""
        self.gains: list[Prediction] | None = []
        """The fixes ranked by predicted gain over the same window (``v`` lists them);
        None while not computed (:meth:`want_gains`)."""
        self._job: GainsJob | None = None
        """What the gains of the verdict shown are computed from."""
        self._gains_busy: GainsJob | None = None
        """The latest gains computation running."""
        self._waiting: list[tuple[GainsJob, Callable[[list[Prediction]], None]]] = []
        self._forms: tuple[str, ...] = ()
        """The line's forms, longest first (:func:`line_forms`), without a prediction."""
        self._drawn = -1
        """The session generation of the verdict drawn."""
        self._marked_for = -1
        """The session generation the line last said it computes for."""
        self._last = float("-inf")
        self._seen: tuple[int, bool, int] = (-1, False, 0)
        """(session generation, any data yet, playhead) when the last computation started."""
        self._pending: Model | None = None
        """The model of a show skipped by the throttle, served when it allows."""
        self._trailing: Timer | None = None

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.text

    def show(self, model: Model) -> None:
        if not model.generation:  # nothing read yet: "no verdict" would be untrue
            self.set_note(COMPUTING)
            self._marked = True
            return
        now = time.monotonic()
        data = session_of(model)
        if self._forms and data.generation not in (self._drawn, self._marked_for):
            self._mark_pending(model)
            self._marked_for = data.generation
        seen = (data.generation, data.batches > 0, model.now_ns)
        if self.computed and seen == self._seen:
            return  # nothing new since the last computation
        wait = self._last + EVERY_S - now
        if self.computed and seen[:2] == self._seen[:2] and wait > 0:
            # at most every EVERY_S, unless a seek or the first data came since; but
            # the last show must be served: a paused replay may not show again, and the
            # line kept a verdict of seconds before beside a GPU time tab of the playhead
            self._pending = model
            if self._trailing is None:
                self._trailing = self.set_timer(wait + 0.01, self._serve_pending)
            return
        if not self.busy:  # (while busy, the show is served when the computation ends)
            self._last, self._seen = now, seen
        super().show(model)

    def settled(self) -> bool:
        return super().settled() and self._pending is None and self._gains_busy is None

    def _serve_pending(self) -> None:
        self._trailing = None
        if self._pending is not None:
            model, self._pending = self._pending, None
            self.show(model)

    def snapshot(self, model: Model) -> Any:
        return take_snapshot(model, self.pid, self.app.source, self.agent_error())

    def _mark_pending(self, model: Model) -> None:
        """After a seek the verdict shown is another window's: say this one's is being
        computed, in the line itself (until :meth:`apply` draws it)."""
        label = tab_window(model, self.app.source, self.pid).label()
        self.verdict, self._job, self.gains = None, None, []
        self._forms = (f"{label} · {COMPUTING}",)
        self._fit()

    def compute(self, snap: Any) -> tuple[Verdict | None, tuple[str, ...], GainsJob | None]:
        return shared("verdict", snap, self.pid, lambda: self._verdict(snap))

    def _verdict(self, snap: Any) -> tuple[Verdict | None, tuple[str, ...], GainsJob | None]:
        verdict = window_verdict(snap, self.pid)
        result = gpu_time(snap, self.pid)  # (the one computation, shared)
        label = snap.window.label() if result is None else result.label
        if verdict is not None:
            return verdict, line_forms(label, verdict), GainsJob(snap, self.pid, result)
        if len(snap.records.ops) and (snap.records.ops["pid"] == self.pid).any():
            return None, (f"{label} · no GPU work of this process in the window",), None
        return (
            None,
            (f"{label} · no verdict: {snap.agent_reason}", f"{label} · no verdict (v: why)"),
            None,
        )

    def apply(self, result: Any) -> None:
        self.verdict, self._forms, self._job = result
        self._drawn = self._generation
        self.gains = None if self._job is not None else []
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Show the longest form of the line that fits (else the shortest, cut); the
        predicted gain where the whole line and it fit (computed then, marked meanwhile)."""
        width = self.text.content_region.width or self.app.size.width - 2
        forms = self._forms
        if self.gains is None and forms and cell_len(forms[0] + PENDING) <= width:
            self.want_gains()
            forms = (forms[0] + PENDING, *forms)
        elif self.gains:
            forms = (self.line(), *forms)
        fits = [form for form in forms if cell_len(form) <= width]
        self.text.update(fits[0] if fits else forms[-1] if forms else "")

    def line(self) -> str:
        """The whole line, with its prediction once computed (its reason when there is
        no verdict)."""
        return (self._forms[0] if self._forms else "") + best(self.gains or [])

    # --- predicted gains, on demand -------------------------------------------------------
    def want_gains(self, then: Callable[[list[Prediction]], None] | None = None) -> None:
        """Compute the gains of the verdict shown, if not done; ``then(gains)`` once known
        (the gains of that verdict, even if a newer one is shown by then)."""
        job = self._job
        if job is None or self.gains is not None:
            if then is not None:
                then(self.gains or [])
            return
        if then is not None:
            self._waiting.append((job, then))
        if self._gains_busy is not job:
            self._gains_busy = job
            self.call_after_refresh(self._compute_gains, job)

    @work(thread=True, exit_on_error=False, group="gains", description="predicted gains")
    def _compute_gains(self, job: GainsJob) -> None:
        try:
            result: list[Prediction] | Exception = job.compute()
        except Exception as exc:  # said in the note, never raised into the UI
            result = exc
        with contextlib.suppress(RuntimeError):  # the app is shutting down
            self.app.call_from_thread(self._gains_done, job, result)

    def _gains_done(self, job: GainsJob, result: list[Prediction] | Exception) -> None:
        if self._gains_busy is job:
            self._gains_busy = None
        gains = [] if isinstance(result, Exception) else result
        if isinstance(result, Exception):
            self.set_note(f"predicted gains failed: {type(result).__name__}: {result}")
        waiting, self._waiting = self._waiting, []
        for pending, then in waiting:
            if pending is job:
                then(gains)
            else:
                self._waiting.append((pending, then))
        if job is self._job and self.is_mounted:
            self.gains = gains
            self._fit()
