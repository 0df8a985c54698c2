"""How far kernel sampling moves the breakdown, on real recordings: each recording as the
agent's duty cycle would have recorded it (the first second traced in full, then each
second off for ``1 - duty``; tests/analysis/sampled.py drops what CUPTI would not have
recorded), attributed over the window ``gtop report`` picks, against the unsampled run;
then the decodes the agent itself sampled on the H200 (``recordings/sampling/``) against
the same decode traced in full (another process: run-to-run spread is in the error too).

    PYTHONPATH=$PWD python3 benchmarks/sampling_accuracy.py [--duty 0.33]

Prints, per process, the largest error of any cause's share (points of the window) for
shares of the traced time alone and for the estimate gtop uses
(:func:`gtop.analysis.attribution.partition.estimated`), and GAR three ways; then, for the H200
recordings, H:CTRL, G:QUEUE, GAR and the verdict as ``gtop report`` gives them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gtop.analysis.attribution.causes import Cause
from gtop.analysis.attribution.partition import Summary, attribute
from gtop.analysis.attribution.records import Records
from gtop.analysis.report.document import ATTRIBUTION_STREAMS
from gtop.recordings.clipped import Window, choose
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from tests.analysis.sampled import agent_cycle, sample

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
NAMES = (
    "sampling/eager-decode-every-kernel",  # (fixes/decode-eager: sampled by the agent)
    "decode-eager",
    "train_loop_cupti",
    "fixes/item-every-step",
    "constructed-tiny",
    "fixes/preprocess-host",
)
EVERY = "sampling/eager-decode-every-kernel"
"""The 8 s eager decode traced in full (``--trace-every-kernel``, H200)."""
AGENT = ("sampling/eager-decode", "sampling/decode-10s")
"""The same decode (8 s, 10 s) recorded in the default mode: sampled by the agent."""
ON = [Cause.G_COMP, Cause.G_XFER, Cause.G_COMM]


def streams(name: str) -> tuple[Window, dict[str, np.ndarray]]:
    """The window ``gtop report`` picks and the streams attribution reads."""
    with Recording(RECORDINGS / f"{name}.gtop") as rec:
        return choose(rec), {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}


def row(label: str, want: Summary, got: Summary) -> str:
    """A first-table row: ``got`` (sampled) against ``want`` (every kernel traced)."""
    exact = want.totals / want.duration_ns
    seen = got.totals.astype(float)
    seen[Cause.NOT_TRACED] = 0
    traced = seen / got.traced_ns
    est = got.estimated / got.duration_ns
    return (
        f"| {label} | {got.traced_ns / got.duration_ns:.0%} "
        f"| {np.abs(traced - exact).max():.3f} | {np.abs(est - exact).max():.3f} "
        f"| {exact[ON].sum():.3f} | {traced[ON].sum():.3f} | {got.gar:.3f} |"
    )


def gpu0(name: str) -> Summary:
    """GPU 0's attribution over the recording's window (one process on it)."""
    window, data = streams(name)
    (res,) = attribute(Records.from_streams(data), window.t0, window.t1).values()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duty", type=float, default=0.33)
    args = ap.parse_args()
    print(
        "| recording | traced | max share error: traced only | estimate "
        "| GAR full | traced only | estimate |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in NAMES:
        window, data = streams(name)
        full = attribute(Records.from_streams(data), window.t0, window.t1, "process")
        cycle = agent_cycle(data["kernel"], args.duty)
        sampled = attribute(
            Records.from_streams(sample(data, cycle)), window.t0, window.t1, "process"
        )
        for unit, want in full.items():
            print(row(f"{name} (pid {unit.pid})", want, sampled[unit]))
    every = gpu0(EVERY)
    for name in AGENT:
        print(row(f"{name} (agent-sampled on the H200) vs {EVERY}", every, gpu0(name)))

    print("\n| recording | traced | H:CTRL | G:QUEUE | GAR | verdict |")
    print("|---|---|---|---|---|---|")
    for name in (EVERY, *AGENT):
        with Recording(RECORDINGS / f"{name}.gtop") as rec:
            doc = read_report(rec)
        entry, verdict = doc["gpu"]["0"], doc["verdict"]
        share = {c: entry["off_s"][c] / entry["duration_s"] for c in ("H:CTRL", "G:QUEUE")}
        print(
            f"| {name} | {entry['traced_s'] / entry['window_s']:.0%} | {share['H:CTRL']:.1%} "
            f"| {share['G:QUEUE']:.1%} | {entry['gar']:.1%} | {verdict['kind']} |"
        )


if __name__ == "__main__":
    main()
