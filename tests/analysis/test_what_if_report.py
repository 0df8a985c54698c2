"""Predicted gains in ``gtop report``: the text, ``--json`` and ``--what-if`` (issue 25)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from gtop.analysis.diagnosis.what_if import parse_change
from gtop.analysis.report.report_text import format_report
from gtop.recordings.reader import Recording
from gtop.recordings.report_data import read_report
from tests.analysis.recordings import RECORDINGS, ROOT
from tests.reports import report_of


@pytest.fixture(scope="module")
def decode() -> dict:
    with Recording(RECORDINGS / "fixes" / "decode-eager.gtop") as rec:
        return read_report(rec, asked=[parse_change("H:CTRL=0"), parse_change("kernel:*gemv*=0.5")])


def test_gains_ranked_in_json_and_verdict(decode: dict) -> None:
    w = decode["what_if"]
    assert w["steps"]["ops_per_step"] == 145
    assert w["steps"]["source"] == "kernels" and "range" not in w["steps"]  # no NVTX ranges
    truth = json.loads((RECORDINGS / "fixes" / "decode-eager.json").read_text())
    assert w["steps"]["steps_per_s"] == pytest.approx(truth["tokens_per_s"], rel=0.05)  # 257 vs 250
    gains = decode["verdict"]["gains"]
    assert gains == w["recommendations"]
    assert gains[0]["fix"] == "use CUDA graphs" and gains[0]["dominant_after"] == "G:COMP"
    assert [g["speedup"] for g in gains] == sorted((g["speedup"] for g in gains), reverse=True)
    assert all(g["low"] <= g["speedup"] <= g["high"] for g in gains)


def test_asked_changes_answered(decode: dict) -> None:
    ctrl, kernel = decode["what_if"]["asked"]
    assert ctrl["change"] == "H:CTRL=0" and ctrl["speedup"] > 5
    assert kernel["speedup"] == pytest.approx(1.0, abs=0.02)  # launch-bound: no gain


def test_text_names_the_step_and_the_gains(decode: dict) -> None:
    text = format_report(decode)
    assert "Predicted gains (the window replayed with each fix, ranked;" in text
    assert "steps/s" in text and "- use CUDA graphs: predicted ×" in text
    assert "steps/s, from the repeating kernel sequence" in " ".join(text.split())
    assert "What if H:CTRL=0: predicted ×" in text
    assert "What if kernel:*gemv*=0.5: predicted ×1.00" in text


def test_bad_what_if_is_one_error_line() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gtop", "report", str(RECORDINGS / "constructed-app.gtop"),
         "--what-if", "kernel:x=0"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--what-if 'kernel:x=0': a kernel cannot take no time" in out.stderr


def test_cli_help_names_every_change() -> None:
    from gtop.analysis.diagnosis import what_if
    from gtop.cli import parser as cli

    assert cli.WHAT_IF_HELP == what_if.HELP


def test_v_box_lists_the_ranked_gains(decode: dict) -> None:
    """The ``v`` box words the verdict as the report does, then the ranked gains."""
    from gtop.analysis.diagnosis.gains import Prediction
    from gtop.analysis.diagnosis.verdict import Verdict
    from gtop.views.screens.verdict import verdict_text

    v = decode["verdict"]
    verdict = Verdict(**{k: v[k] for k in Verdict.__dataclass_fields__})
    gains = [Prediction(**g) for g in v["gains"]]
    text = verdict_text(verdict, "", gains).plain
    assert "Predicted gains (this window replayed with each fix, ranked)" in text
    assert f" - {gains[0].line()}" in text and "use CUDA graphs: predicted ×" in text


def test_an_input_bound_verdict_ranks_the_dataloader_fix_first() -> None:
    """The demo's loader: its longest waits have no Python frames (a lock in native
    code), its Python-framed ones are DataLoader waits, so the verdict says "waiting for
    input data"; the what-if counts the same waits as the DataLoader's, and ranks that
    fix first, not a separate "remove the blocking waits" (one rule, one story)."""
    report = report_of(ROOT / "gtop" / "demo" / "loader-1-worker.gtop")
    assert report["verdict"]["kind"] == "input-bound"
    fixes = [g["fix"] for g in report["verdict"]["gains"]]
    assert fixes[0] == "a DataLoader that keeps up", fixes
    assert "remove the blocking waits" not in fixes
    assert report["verdict"]["gains"][0]["speedup"] > 3
