"""The text report of real recordings: a verdict in plain words, the breakdown with each
cause's phrase, the tables that explain it, all in 100 columns."""

from __future__ import annotations

from typing import Any

import pytest

from gtop.analysis.attribution.causes import EXPLANATIONS, LABELS, PHRASES, Cause
from gtop.analysis.report.report_text import TOP, WIDTH, format_report
from tests.reports import report_of

from .recordings import RECORDINGS

ALL = sorted(p.name for p in RECORDINGS.glob("*.gtop"))


def report(name: str) -> dict[str, Any]:
    return report_of(RECORDINGS / name)


@pytest.mark.parametrize(
    "name", ["constructed-io.gtop", "loader-8-workers.gtop", "decode-graphs.gtop"]
)
def test_every_line_fits_100_columns(name: str) -> None:
    text = format_report(report(name))
    assert max(len(line) for line in text.splitlines()) <= WIDTH


def test_breakdown_names_each_cause_in_plain_words() -> None:
    rep = report("constructed-io.gtop")
    text = format_report(rep)
    off = rep["gpu"]["0"]["off_s"]
    assert off["H:IO"] > 1.0
    io_line = next(line for line in text.splitlines() if " H:IO " in line)
    assert PHRASES[Cause.H_IO] in io_line and f"{off['H:IO']:.3f} s" in io_line
    for section in ("Top kernels", "Top CUDA API calls", "Busiest host threads", "Top off-GPU"):
        assert section in text
    # the I/O stack shows the system call the thread was in
    assert "preadv2 (syscall)" in text


def test_window_and_phases_are_said_first() -> None:
    text = format_report(report("constructed-io.gtop"))
    lines = text.splitlines()
    assert lines[3].startswith("Window: ") and "steady state" in lines[3]
    assert any(line.startswith("  startup: ") for line in lines[4:6])
    assert "torch/__init__.py" in text


def test_verdict_in_json_and_text() -> None:
    rep = report("decode-eager.gtop")
    v = rep["verdict"]
    cause = LABELS.index(v["cause"])
    assert v["phrase"] == PHRASES[cause] and v["explanation"] == EXPLANATIONS[cause]
    assert v["launches_per_s"] > 1000 and v["mean_kernel_us"] < 100
    text = format_report(rep)
    assert f"Verdict (GPU 0): {v['headline']}" in text
    why = EXPLANATIONS[cause].split(" Usual fix:")[0]
    assert "Why: " + why in text.replace("\n    ", " ")


def test_process_commands_stay_distinguishable() -> None:
    """The main process and its DataLoader workers share a long command line: the report
    shows each one's name and the script, not the same 60-character prefix."""
    text = format_report(report("loader-8-workers.gtop"))
    procs = text.split("\nProcesses\n")[1].split("\n\n")[0].splitlines()
    assert len(procs) == 9
    assert sum("[pt_data_worker]" in line for line in procs) == 8
    assert all("cpu_bound_loader.py" in line for line in procs)


def test_a_launched_targets_script_comes_first() -> None:
    """``python3 -m torch.distributed.run --standalone --nproc-per-node 2 ddp_straggler.py``
    cut at 80 columns lost the script: the report names it first, then the launcher."""
    text = format_report(report("ddp-straggler-gpu.gtop"), width=80)
    target = next(line for line in text.splitlines() if line.startswith("target: "))
    assert target.startswith("target: pid 2771 ddp_straggler.py --out ")
    assert len(target) <= 80


def test_no_record_advice_on_a_recording_with_cupti_data() -> None:
    """``gtop record -- CMD`` gave an exact breakdown: no advice to run it again."""
    rep = report("decode-eager.gtop")
    assert rep["gpu"]["0"]["exact"]
    assert not [a for a in rep["advice"] if "gtop" in a]
    nvml_only = report("train_loop_nvml.gtop")
    assert any("gtop record -- CMD" in a for a in nvml_only["advice"])


def test_every_recording_gets_a_verdict_with_its_phrase() -> None:
    """Every recording with GPU data; one without (CPU-only DDP) says so in one line."""
    for name in ALL:
        rep = report(name)
        v = rep["verdict"]
        if not rep["gpu"]:
            assert v is None and not rep["devices"] and not rep["kernels"], name
            assert "\nVerdict: no GPU work in this recording" in format_report(rep)
            continue
        assert v is not None, name
        assert v["phrase"] == PHRASES[LABELS.index(v["cause"])], name
        assert v["headline"] and v["fix"], name


@pytest.mark.parametrize("name", ["fixes/item-never.gtop", "fixes/preprocess-gpu.gtop"])
def test_top_kernels_are_told_apart(name: str) -> None:
    """Namesakes among the top kernels (two ``native::vectorized_elementwise_kernel<…>``
    in item-never) read as the Kernels tab labels them, each its own."""
    lines = format_report(report(name)).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Top kernels"))
    rows = lines[at + 1 : at + 1 + min(TOP, len(report(name)["kernels"]))]
    shown = [row.split("µs", 1)[1].strip() for row in rows]
    assert len(set(shown)) == len(shown) > 1, shown
