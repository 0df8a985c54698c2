"""``gtop report A B``: two real recordings side by side, each workload before and after
its fix (recordings/fixes/, H100 and H200, default agent mode), as text in 100 columns and
as JSON that follows docs/compare.schema.json; errors in one ``gtop:`` line."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from gtop.analysis.report.report_text import WIDTH

from .recordings import RECORDINGS, ROOT
from .test_report_schema import SCHEMA as REPORT_SCHEMA
from .test_report_schema import numeric_keys

FIXES = RECORDINGS / "fixes"
COMPARE_SCHEMA = json.loads((ROOT / "docs" / "compare.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(
    COMPARE_SCHEMA,
    registry=Registry().with_resource(REPORT_SCHEMA["$id"], Resource.from_contents(REPORT_SCHEMA)),
)
PAIRS = [
    # before, after, the verdict before, the cause it names (the fix takes it away)
    ("decode-eager", "decode-graphs", "launch-bound", "H:CTRL"),
    ("loader-1-worker", "loader-8-workers", "input-bound", "OFF_CPU"),
    ("item-every-step", "item-never", "host-compute", "H:APP"),
    ("preprocess-host", "preprocess-gpu", "host-compute", "H:APP"),
]


def gtop(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gtop", "report", *args], capture_output=True, text=True, cwd=ROOT
    )


@functools.cache
def compared(a: str, b: str, *options: str) -> dict[str, Any]:
    out = gtop("--json", str(a), str(b), *options)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def fix(name: str) -> str:
    return str(FIXES / f"{name}.gtop")


def schema_errors(doc: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)
    ]


def test_the_compare_schema_is_valid() -> None:
    jsonschema.Draft202012Validator.check_schema(COMPARE_SCHEMA)


@pytest.mark.parametrize(("before", "after", "kind", "cause"), PAIRS)
def test_the_problem_before_and_the_fix_after(
    before: str, after: str, kind: str, cause: str
) -> None:
    doc = compared(fix(before), fix(after))
    assert not schema_errors(doc)
    a, b = doc["a"]["report"], doc["b"]["report"]
    assert (doc["a"]["file"], doc["b"]["file"]) == (f"{before}.gtop", f"{after}.gtop")
    assert a["verdict"]["kind"] == kind and a["verdict"]["cause"] == cause
    assert b["verdict"]["kind"] == "gpu-bound"
    gar = [r["gpu"][str(r["verdict"]["device"])]["gar"] for r in (a, b)]
    assert doc["delta"]["gar"] == pytest.approx(gar[1] - gar[0]) and doc["delta"]["gar"] > 0.3
    assert doc["delta"]["causes"][cause]["share_of_window"] < -0.25  # the fix took it away
    assert doc["window_kind"] == "steady" == a["window"]["kind"] == b["window"]["kind"]
    # every difference is a number whose key (or its parent's) names its unit
    assert {key for key, _ in numeric_keys(doc["delta"])} == {"gar", "seconds", "share_of_window"}


def test_text_fits_100_columns_with_headline_breakdown_verdicts_and_kernels() -> None:
    doc = compared(fix("decode-eager"), fix("decode-graphs"))
    out = gtop(fix("decode-eager"), fix("decode-graphs"))
    assert out.returncode == 0 and not out.stderr
    lines = out.stdout.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert lines[0].startswith("A: decode-eager.gtop") and "decode_loop.py" in lines[0]
    assert lines[1].startswith("B: decode-graphs.gtop") and "--graphs" in lines[1]
    a, b = doc["a"]["report"], doc["b"]["report"]
    gar = next(line for line in lines if "GPU busy (GAR)" in line).split()
    assert gar[-4:] == [f"{100 * a['verdict']['gar']:.1f}%", f"{100 * b['verdict']['gar']:.1f}%",
                        f"{100 * doc['delta']['gar']:+.1f}", "pt"]  # fmt: skip
    window = next(line for line in lines if "window: steady state" in line)
    for w in (a["window"], b["window"]):
        assert f"{w['from_s']:.2f}–{w['to_s']:.2f} s" in window
    launch = next(line for line in lines if "launching kernels" in line)
    points = 100 * doc["delta"]["causes"]["H:CTRL"]["share_of_window"]
    assert "H:CTRL" in launch and launch.endswith(f"{points:+.1f} pt") and points < -50
    verdict_a = next(line for line in lines if line.startswith("A: GPU idle"))
    assert "launch-bound" in verdict_a
    assert any(line.startswith("B: GPU-bound") for line in lines)
    kernels = lines[lines.index(next(line for line in lines if line.startswith("Top kernels"))) :]
    assert "gemvx::kernel<false…7…>" in kernels[2] and kernels[2].endswith("CUDA graph 2")


def test_both_cover_the_active_window_when_one_has_no_steady_state() -> None:
    """probes_triton.gtop's GPU work is too short to split: the eager decode (steady state
    alone) is read over its active window too, so both GARs cover the same kind of
    window. The fixes/ excerpt: 1.9M-row decode-eager.gtop made this test ~10 s CPU."""
    doc = compared(fix("decode-eager"), str(RECORDINGS / "probes_triton.gtop"))
    assert not schema_errors(doc)
    assert doc["window_kind"] == "active"
    assert compared(fix("decode-eager"), fix("decode-graphs"))["window_kind"] == "steady"
    alone = compared(fix("decode-eager"), fix("decode-eager"), "--from", "active", "--to", "active")
    assert doc["a"]["report"]["window"] == alone["a"]["report"]["window"]
    assert doc["a"]["report"]["gpu"] == alone["a"]["report"]["gpu"]


def test_from_and_to_apply_to_both() -> None:
    doc = compared(fix("decode-eager"), fix("decode-graphs"), "--from", "6", "--to", "8")
    assert not schema_errors(doc)
    assert doc["window_kind"] == "given"
    for side in "ab":
        w = doc[side]["report"]["window"]
        assert (w["from_s"], w["to_s"]) == (6.0, 8.0)


def test_a_recording_without_gpu_work_has_no_differences() -> None:
    doc = compared(fix("decode-eager"), str(RECORDINGS / "ddp-straggler-cpu.gtop"))
    assert not schema_errors(doc)
    assert doc["delta"] == {"gar": None, "causes": None}
    assert doc["window_kind"] is None and doc["b"]["device"] is None
    text = gtop(fix("decode-eager"), str(RECORDINGS / "ddp-straggler-cpu.gtop")).stdout
    assert "no CUDA activity" in text and "B: no verdict" in text


def test_the_same_recording_twice_differs_by_nothing() -> None:
    doc = compared(fix("item-never"), fix("item-never"))
    assert doc["delta"]["gar"] == 0.0
    assert all(d["seconds"] == 0.0 for d in doc["delta"]["causes"].values())


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((fix("item-never"), str(FIXES / "missing.gtop")), "missing.gtop: no such recording"),
        ((fix("item-never"), str(ROOT / "README.md")), "README.md: not a readable gtop recording"),
        ((fix("item-never"),) * 3, "report takes one recording, or two to compare; got 3"),
        ((fix("item-never"), fix("item-never"), "--from", "500"), "item-never.gtop: the window"),
    ],
)
def test_errors_are_one_line(args: tuple[str, ...], says: str) -> None:
    out = gtop(*args)
    assert out.returncode == 1 and not out.stdout
    assert out.stderr.startswith("gtop: ") and says in out.stderr
    assert out.stderr.count("\n") == 1
