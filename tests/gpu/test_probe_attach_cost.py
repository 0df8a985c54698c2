"""Issue 23: a probe turned on in a running Triton loop keeps >= 0.95 of its untraced
launch rate, and the verdict stays "sleeping/blocked" (run: pytest -m gpu
tests/gpu/test_probe_attach_cost.py; about a minute on the H200)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_block_sched_on_a_sleeping_triton_loop(tmp_path: Path) -> None:
    import probe_attach_cost

    result = probe_attach_cost.run(before_s=8, record_s=15, out=tmp_path / "probe.gtop")
    print(result)
    assert result["probed_launches"] > 0, result
    assert result["ratio"] is not None and result["ratio"] >= probe_attach_cost.MIN_RATIO, result
    assert result["verdict_kind"] == "blocked", result
