"""Python frames name the line, by state: for a loop that sleeps, reads a pipe, runs pure
Python and waits for a lock, each at a known line, >= 95% of each phase's time carries
that line (Austin at 100 Hz, joined to the tier's intervals by thread, time and state)."""

from __future__ import annotations

import pytest
from python_lines import framed_shares, run_lines


@pytest.mark.parametrize("tier", ["bpf", "perf"])
def test_each_phase_carries_its_line(tier, tmp_path) -> None:
    log = tmp_path / "phases.log"
    info, run = run_lines(tier, log)
    shares = framed_shares(info, run, log)
    assert set(shares) == {"sleep", "read", "python", "lock"}
    st = run.collector.py
    detail = (shares, st.name, st.samples, st.python_samples, st.last_error)
    for name, (share, seen_ns) in shares.items():
        assert seen_ns > 0.5e9, detail  # each phase ran ~1 s of the 4 s window
        assert share >= 0.95, (name, detail)
