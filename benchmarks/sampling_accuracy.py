"""How far kernel sampling moves the breakdown, on real recordings: each recording as the
agent's duty cycle would have recorded it (the first second traced in full, then each
second off for ``1 - duty``; tests/analysis/sampled.py drops what CUPTI would not have
recorded), attributed over the window ``gtop report`` picks, against the unsampled run.

    PYTHONPATH=$PWD python3 benchmarks/sampling_accuracy.py [--duty 0.33]

Prints, per process, the largest error of any cause's share (points of the window) for
shares of the traced time alone and for the estimate gtop uses
(:func:`gtop.analysis.attribution.estimated`), and GAR three ways.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gtop.analysis.attribution import attribute
from gtop.analysis.causes import Cause
from gtop.analysis.records import Records
from gtop.analysis.report import ATTRIBUTION_STREAMS
from gtop.recordings.clipped import choose
from gtop.recordings.reader import Recording
from tests.analysis.sampled import agent_cycle, sample

RECORDINGS = Path(__file__).resolve().parents[1] / "recordings"
NAMES = (
    "fixes/decode-eager",
    "decode-eager",
    "train_loop_cupti",
    "fixes/item-every-step",
    "constructed-tiny",
    "fixes/preprocess-host",
)
ON = [Cause.G_COMP, Cause.G_XFER, Cause.G_COMM]


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
        with Recording(RECORDINGS / f"{name}.gtop") as rec:
            window = choose(rec)
            data = {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}
        full = attribute(Records.from_streams(data), window.t0, window.t1, "process")
        cycle = agent_cycle(data["kernel"], args.duty)
        sampled = attribute(
            Records.from_streams(sample(data, cycle)), window.t0, window.t1, "process"
        )
        for unit, want in full.items():
            got = sampled[unit]
            exact = want.totals / want.duration_ns
            seen = got.totals.astype(float)
            seen[Cause.NOT_TRACED] = 0
            traced = seen / got.traced_ns
            est = got.estimated / got.duration_ns
            print(
                f"| {name} (pid {unit.pid}) | {got.traced_ns / got.duration_ns:.0%} "
                f"| {np.abs(traced - exact).max():.3f} | {np.abs(est - exact).max():.3f} "
                f"| {exact[ON].sum():.3f} | {traced[ON].sum():.3f} | {got.gar:.3f} |"
            )


if __name__ == "__main__":
    main()
