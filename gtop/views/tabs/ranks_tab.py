"""Process-screen tab "Ranks" (issue 18): the ranks of a distributed job side by side.

Shown only while the session holds two ranks or more (processes with ``RANK`` in their
environment). Over the window of :func:`~gtop.views.tabs.session_data.tab_window` (the
verdict line's, named in the tab's head; the report's ranks over the same window): per rank its
GAR, communication time (G:COMM), time in collectives, straggler wait (time it waited in
collectives for a slower rank) and how often it entered last; then the slowest rank.
The analysis (:mod:`gtop.analysis.distributed.ranks`) runs on a worker thread over a snapshot of the
session's attribution engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from gtop.analysis.attribution.records import Records
from gtop.analysis.distributed.ranks import Job, analyse
from gtop.analysis.distributed.roles import ranks
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.core.model import Model
from gtop.views.fmt import values as fmt
from gtop.views.tabs.panels import PanelSpec
from gtop.views.tabs.session_data import session_of, tab_window
from gtop.views.tabs.worker_panel import WorkerPanel


def has_ranks(model: Model, pid: int) -> bool:
    """Whether the session holds two ranks or more (the tab is shown only then)."""
    return len(ranks(_processes(model))) >= 2


def _processes(model: Model) -> dict[int, dict[str, Any]]:
    return {int(k): v for k, v in model.entity_values("process").items()}


@dataclass(frozen=True)
class _Snap:
    processes: dict[int, dict[str, Any]]
    records: Records
    stacks: dict[int, Any]
    kernel_names: dict[int, str]
    t0: int
    t1: int
    label: str
    """The window, named (the verdict line's: :func:`tab_window`)."""


class RanksTab(WorkerPanel):
    """The ranks table and the straggler line."""

    DEFAULT_CSS = """
    RanksTab > #ranks-table { height: auto; padding: 0 1; }
    RanksTab > #ranks-verdict { height: auto; padding: 1 1 0 1; }
    """

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.table = Static("", id="ranks-table")
        self.verdict = Static("", id="ranks-verdict")
        self.result: dict[str, Any] | None = None
        """The last analysis drawn (:func:`gtop.analysis.distributed.ranks.analyse`)."""

    def compose(self) -> ComposeResult:
        yield self.note
        yield self.table
        yield self.verdict

    def reason(self, model: Model) -> str | None:
        if not has_ranks(model, self.pid):
            return "not a distributed job: fewer than two processes with RANK set"
        return None

    def snapshot(self, model: Model) -> _Snap:
        window = tab_window(model, self.app.source, self.pid)
        entities = [e for kind in ("kernel_name",) for e in model.entities.get(kind, {}).values()]
        return _Snap(
            processes=_processes(model),
            records=session_of(model).snapshot(),
            stacks={int(k): v for k, v in model.entity_values("stack").items()},
            kernel_names=names_from_entities(entities),
            t0=window.t0,
            t1=window.t1,
            label=window.label(),
        )

    def compute(self, snap: _Snap) -> tuple[str, dict[str, Any] | None]:
        job = Job(snap.processes, snap.records, snap.stacks, snap.kernel_names)
        return snap.label, analyse(job, snap.t0, snap.t1)

    def apply(self, computed: tuple[str, dict[str, Any] | None]) -> None:
        label, result = computed
        self.computed += 1
        self.result = result
        if result is None:
            self.set_note("no data in the window yet")
            return
        self.set_note(f"{label}: {result['collectives']} collectives matched across the ranks")
        self.table.update(ranks_table(result))
        self.verdict.update(verdict(result))


def ranks_table(result: dict[str, Any]) -> Table:
    """One row per rank."""
    table = Table(box=None, pad_edge=False, header_style="bold")
    for name, justify in (
        ("RANK", "right"), ("PID", "right"), ("HOST", "left"), ("GAR", "right"),
        ("G:COMM", "right"), ("IN COLLECTIVES", "right"), ("STRAGGLER WAIT", "right"),
        ("ENTERED LAST", "right"), ("OVERLAP", "right"),
    ):  # fmt: skip
        table.add_column(name, justify=justify, no_wrap=True)
    slowest = result["slowest_rank"]
    for e in result["ranks"]:
        wait = f"{e['straggler_wait_s']:.2f} s ({e['straggler_wait_share']:.0%})"
        table.add_row(
            f"{'▶' if e['rank'] == slowest else ''}{e['rank']}",
            str(e["pid"]),
            str(e["host"] or fmt.NA),
            fmt.NA if e["gar"] is None else f"{e['gar']:.0%}",
            f"{e['on']['G:COMM']:.2f} s",
            f"{e['collective_s']:.2f} s ({e['collective_source']})",
            wait,
            str(e["entered_last"]),
            _overlap(e),
        )
    return table


def _overlap(entry: dict[str, Any]) -> str:
    """Share of communication hidden under compute: overall, and the median step."""
    if entry["overlap"] is None:
        return fmt.NA
    steps = entry.get("overlap_per_step")
    median = f" (step median {steps['median']:.0%})" if steps else ""
    return f"{entry['overlap']:.0%}{median}"


def verdict(result: dict[str, Any]) -> Text:
    """One line naming the slowest rank, or saying there is none."""
    slow = result["slowest_rank"]
    if slow is None:
        return Text("No straggler: no rank waited 1% of the window for another.")
    return Text.assemble(
        ("▶ Slowest rank: ", "bold"),
        (str(slow), "bold"),
        f". The others wait for it in the collectives (up to {result['max_wait_share']:.0%} "
        "of the window): what does it do between collectives that they do not?",
    )


PANEL = PanelSpec(
    "Ranks",
    RanksTab,
    order=75,
    about=(
        "The ranks of the distributed job (processes with RANK set) side by side over the "
        "last 10 s: GAR, communication kernels (G:COMM), time in collectives, and straggler "
        "wait, the time a rank waited in a collective for a later one; ▶ marks the slowest "
        "rank, the one that entered last most often. Shown only for a job with two ranks "
        "or more."
    ),
    when=has_ranks,
)
