"""Tier selection and what a run without privileges is told."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from host_harness import phases

from gtop.collectors.threads.tiers import describe, open_thread_collector, tier_report
from gtop.core.hub import Hub

ROOT = Path(__file__).parents[2]
_UNPRIVILEGED = """
import json, sys
from gtop.collectors.threads.tiers import describe, open_thread_collector, tier_report
from gtop.core.hub import Hub
col = open_thread_collector(Hub(), int(sys.argv[1]), python_stacks=False, sample_hz=99)
col.stop()
print(json.dumps({"tier": col.tier, "line": describe(col),
                  "report": {t.tier: [t.available, t.needs] for t in tier_report()}}))
"""


def test_auto_takes_bpf_as_root_and_says_so():
    with phases() as (_proc, info):
        col = open_thread_collector(Hub(), info["pid"], python_stacks=False)
        col.stop()
    assert col.tier == "bpf"
    # (a thread on a CPU when the hooks attached may add "N context switches no hook saw")
    assert describe(col, tier_report(load=False)).startswith("host threads: bpf tier (btf)")


def test_unknown_tier_is_refused():
    with pytest.raises(ValueError, match="unknown tier"):
        open_thread_collector(Hub(), os.getpid(), tier="gpu")


def test_unprivileged_run_degrades_and_names_capabilities():
    """Root without capabilities (``setpriv``, util-linux) watching a process: BPF (and perf
    at perf_event_paranoid 2) are refused, the collector falls back and says why."""
    drop = ["setpriv", "--bounding-set", "-all", "--inh-caps", "-all", "--"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(["sleep", "30"]) as target:
        try:
            out = subprocess.run(
                [*drop, sys.executable, "-c", _UNPRIVILEGED, str(target.pid)], env=env,
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        finally:
            target.kill()
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    report = result["report"]
    assert not report["bpf"][0] and "CAP_BPF" in report["bpf"][1]
    assert result["tier"] in ("perf", "proc")
    assert "bpf needs" in result["line"] and "CAP_BPF" in result["line"]
