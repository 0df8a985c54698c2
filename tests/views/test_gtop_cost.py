"""gtop's own cost and graph-level CUDA graphs, on a real H200 recording.

``recordings/fixes/decode-graphs.gtop`` is batch-1 decode replayed as a CUDA graph,
recorded in the default agent mode: each replay is one ``CUDA graph N`` kernel row (no
node rows), and the agent sent what it cost the target once a second.
"""

from __future__ import annotations

from pathlib import Path

from gtop.analysis.report.document import build_report
from gtop.analysis.report.report_text import format_report
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report_data
from tests.views.conftest import SIZE, AppFactory

REPO = Path(__file__).resolve().parents[2]
GRAPHS = REPO / "recordings" / "fixes" / "decode-graphs.gtop"


def report_of(path: Path) -> dict:
    with Recording(path) as rec:
        data, kernels = read_report_data(rec)
        return build_report(rec.meta, data, rec.entities(), rec.problems, rec.time_range(), kernels)


def test_graph_replays_are_one_row_each_and_the_report_shows_gtops_cost() -> None:
    with Recording(GRAPHS) as rec:
        k = rec.read("kernel")
        names = {int(e.key): e.value["name"] for e in rec.entities("kernel_name")}
    whole = k[(k["graph_id"] != 0) & (k["graph_node_id"] == 0)]
    assert len(whole) > 10_000 and not (k["graph_node_id"] != 0).any()
    assert {names[int(i)] for i in set(whole["name_id"].tolist())} == {"CUDA graph 2"}

    report = report_of(GRAPHS)
    cost = report["agent_cost"]["total"]
    assert cost["processes"] == 1 and cost["records_per_s"] > 1000
    assert 0 < cost["agent_cpu"] < 0.01 and 0 < cost["gil"] < 0.01
    assert "gtop cost:" in format_report(report)


async def test_status_line_shows_gtops_cost_in_replay(replay_app: AppFactory) -> None:
    app = replay_app(GRAPHS, at_s=8.0)  # the agent reported its cost at 4.8 to 7.8 s
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.3)
        cost = app.status().cost
        assert cost is not None and cost.startswith("gtop cost: ") and "rec/s" in cost
