"""Python frames name the line, by state: for a loop that sleeps, reads a pipe, runs pure
Python and waits for a lock, each at a known line, >= 95% of each phase's time carries
that line (Austin at 100 Hz, joined to the tier's intervals by thread, time and state)."""

from __future__ import annotations

import pytest
from python_lines import framed_shares, run_lines


# bpf: >= 95% each (99-100% at load 10-21 on the 2-core VM). perf: 87-100% at load 17-21:
# its intervals stretch where it misses switches under load (a 100 ms lock wait's blocked
# interval ran on over the next phases), which no join can undo.
@pytest.mark.parametrize(("tier", "floor"), [("bpf", 0.95), ("perf", 0.85)])
def test_each_phase_carries_its_line(tier, floor, tmp_path) -> None:
    log = tmp_path / "phases.log"
    info, run = run_lines(tier, log)
    shares = framed_shares(info, run, log)
    assert set(shares) == {"sleep", "read", "python", "lock"}
    st = run.collector.py
    detail = (shares, st.name, st.samples, st.python_samples, st.last_error)
    for name, (share, seen_ns) in shares.items():
        assert seen_ns > 0.5e9, detail  # each phase ran ~1 s of the 4 s window
        assert share >= floor, (name, detail)


@pytest.mark.gpu
def test_item_phase_carries_the_item_line(tmp_path) -> None:
    """On a GPU: the ``.item()`` phase (the host blocked in the CUDA runtime until a
    ``torch.cuda._sleep`` kernel ends) carries ``py_lines.py:LINE`` of the ``.item()``
    call, as every other phase carries its own."""
    log = tmp_path / "phases.log"
    info, run = run_lines("bpf", log, "--cuda")
    shares = framed_shares(info, run, log)
    assert "item" in shares, "torch or the GPU is missing"
    for name, (share, _seen) in shares.items():
        assert share >= 0.95, (name, shares)


@pytest.mark.gpu
def test_sync_bound_verdict_quotes_the_item_line(tmp_path) -> None:
    """``gtop record`` of item_sync.py (``.item()`` every step): the verdict's evidence
    or fix names the file and line of the ``.item()`` call."""
    import json
    import subprocess
    import sys

    from python_lines import WORKLOAD

    workload = WORKLOAD.with_name("item_sync.py")
    line = next(
        i
        for i, text in enumerate(workload.read_text().splitlines(), 1)
        if "loss = step_loss.item()" in text
    )
    out = tmp_path / "item.gtop"
    cmd = [sys.executable, "-m", "gtop", "record", "-o", str(out), "--", sys.executable]
    subprocess.run([*cmd, str(workload), "--item-every", "1", "--seconds", "4"], check=True)
    report = subprocess.run(
        [sys.executable, "-m", "gtop", "report", "--json", str(out)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    verdict = json.loads(report)["verdict"]
    assert f"item_sync.py:{line}" in json.dumps(verdict), verdict
