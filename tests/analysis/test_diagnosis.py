"""Every recording's verdict names its known cause (issue 13), from ``gtop report``'s
path and, for the full-mode recordings, from what the default agent mode records of
the same run (the recording without its ``api`` stream).

What each recording is known to be comes from its own files: a constructed case's
sidecar ``.json`` (the workload's ``expected`` shares, by construction), the realistic
pairs' ``realistic_breakdown.json`` (calibrated before/after a fix), or the workload
named below for the rest.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from gtop.analysis.attribution.records import Records, mark_comm
from gtop.analysis.diagnosis.verdict import decide, from_entry
from gtop.analysis.distributed.ranks import comm_labels
from gtop.analysis.kernels.cuda_activity import names_from_entities
from gtop.analysis.report.document import ATTRIBUTION_STREAMS, stack_frames
from gtop.analysis.report.gpu_report import gpu_report
from gtop.recordings.clipped import choose
from gtop.recordings.reader import Recording
from tests.reports import report_of

from .recordings import RECORDINGS

CAUSE_KIND = {
    "H:APP": "host-compute",
    "OFF_CPU": "blocked",
    "H:IO": "io-bound",
    "H:CTRL": "launch-bound",
    "H:WAIT_GPU": "sync-bound",
}
OTHERS = {
    "slow_loader": "input-bound",  # a training loop waiting on a slow DataLoader
    "train_loop_cupti": "launch-bound",  # batch-16 GPT steps: ~18 µs kernels, eager
    "idle_busy_idle": "gpu-bound",  # bf16 matmuls (the GPU's busy span, NVML only)
    "train_loop_nvml": "no-host-data",  # NVML and host data only: no CUDA activity
    "probes_triton": "no-host-data",  # probe records and NVML only
}
"""Recordings without a sidecar: what their workload is."""
NO_GPU = ("ddp-node0-cpu", "ddp-node1-cpu", "ddp-straggler-cpu")
"""CPU-only (gloo) recordings: no GPU, no verdict."""


def expected_kind(name: str) -> tuple[str, str | None]:
    """(verdict kind, cause or None) the recording is known to show."""
    sidecar = RECORDINGS / f"{name}.json"
    if sidecar.exists():
        expected = json.loads(sidecar.read_text())["expected"]
        return known(expected)
    for run in json.loads((RECORDINGS / "realistic_breakdown.json").read_text()):
        if run["name"] == name:
            return known(run["workload"]["expected"])
    return OTHERS[name], None


def known(expected: dict[str, Any]) -> tuple[str, str | None]:
    if str(expected.get("cause", "")).startswith("GPU-bound"):
        return "gpu-bound", "G:COMP"
    if expected.get("bound") == "host":  # kernel_speedup.py --bound host: bookkeeping
        return "host-compute", "H:APP"
    if "straggler" in expected:  # NCCL ranks waiting for a slower one
        return "communication-bound", "G:COMM"
    if "dominant" in expected:
        return CAUSE_KIND[expected["dominant"]], expected["dominant"]
    causes = [k for k in expected if k in CAUSE_KIND]
    if causes:
        return CAUSE_KIND[causes[0]], causes[0]
    flags = {
        "launch_bound": ("launch-bound", "H:CTRL"),
        "loader_bound": ("input-bound", None),
        "sync_bound": ("host-compute", None),
        "host_bound": ("host-compute", "H:APP"),
    }
    for flag, answer in flags.items():
        if flag in expected:
            return answer if expected[flag] else ("not " + answer[0], None)
    raise KeyError(f"no known cause in {expected}")


NAMES = sorted(
    str(p.relative_to(RECORDINGS).with_suffix(""))
    for p in RECORDINGS.rglob("*.gtop")
    if p.stem not in NO_GPU
)
"""Every recording with GPU work: recordings/ (full agent mode), recordings/default-mode/
(the constructed cases in the default mode) and recordings/fixes/ (the four fix pairs
in the default mode)."""


def report(name: str) -> dict[str, Any]:
    return report_of(RECORDINGS / f"{name}.gtop")


def check(kind: str, cause: str | None, verdict: dict[str, Any] | Any) -> None:
    got = verdict if isinstance(verdict, dict) else verdict.as_json()
    if kind.startswith("not "):
        assert got["kind"] != kind[4:], got["headline"]
        return
    assert got["kind"] == kind, got["headline"]
    if cause is not None:
        assert got["cause"] == cause, got["headline"]


@pytest.mark.parametrize("name", NAMES)
def test_report_verdict_names_the_known_cause(name: str) -> None:
    kind, cause = expected_kind(name)
    verdict = report(name)["verdict"]
    check(kind, cause, verdict)
    assert verdict["evidence"] and verdict["fix"]
    if kind == "launch-bound":
        assert "CUDA graph" in verdict["fix"] and "reduce-overhead" in verdict["fix"]
    if kind == "input-bound":
        assert "num_workers" in verdict["fix"] and "pin_memory" in verdict["fix"]
    if name.endswith(("item-every-step", "constructed-app")):
        assert any("synchronising call" in e for e in verdict["evidence"])


def full_mode(name: str) -> bool:
    with Recording(RECORDINGS / f"{name}.gtop") as rec:
        return "api" in rec.streams


@pytest.mark.parametrize("name", [n for n in NAMES if full_mode(n)])
def test_default_mode_verdict_names_it_too(name: str) -> None:
    """The same run as the default agent mode records it: no ``api`` stream."""
    kind, cause = expected_kind(name)
    with Recording(RECORDINGS / f"{name}.gtop") as rec:
        window = choose(rec)
        batches = {n: rec.read(n) for n in ATTRIBUTION_STREAMS if n in rec.streams}
        stacks = stack_frames(rec.entities("stack"))
        names = names_from_entities(rec.entities())
    batches.pop("api")
    records = Records.from_streams({k: v for k, v in batches.items() if len(v)})
    mark_comm(records.ops, comm_labels(names))  # as the report does: NCCL kernels by name
    entry = gpu_report(records, window.t0, window.t1, stacks=stacks)["0"]
    kernels = records.ops[records.ops["kind"] == 0]
    kernels = kernels[(kernels["t"] >= window.t0) & (kernels["t"] < window.t1)]
    verdict = from_entry(entry, len(kernels), int((kernels["end"] - kernels["t"]).sum()))
    assert verdict is not None
    check(kind, cause, verdict)


def test_fixes_move_gar_and_the_named_cause() -> None:
    """The realistic pairs (full mode) and the four fix pairs recorded in the default
    mode: after the fix GAR is higher and the cause named before it has a smaller
    share."""
    pairs = [("decode-eager", "decode-graphs"), ("loader-1-worker", "loader-8-workers")]
    pairs += [
        (f"fixes/{a}", f"fixes/{b}")
        for a, b in [
            ("decode-eager", "decode-graphs"),
            ("loader-1-worker", "loader-8-workers"),
            ("item-every-step", "item-never"),
            ("preprocess-host", "preprocess-gpu"),
        ]
    ]
    for before, after in pairs:
        b, a = report(before), report(after)
        cause = b["verdict"]["cause"]

        def share(rep: dict[str, Any], cause: str = cause) -> float:
            entry = rep["gpu"]["0"]
            return {**entry["on_s"], **entry["off_s"]}[cause] / entry["duration_s"]

        assert a["gpu"]["0"]["gar"] > b["gpu"]["0"]["gar"], (before, after)
        assert share(a) < share(b), (before, after, cause)


def test_collectives_are_not_called_gpu_bound() -> None:
    """Seconds per cause of rank 0 in a 2-H200 NCCL job whose rank 1 sleeps 20 ms a step
    (benchmarks/capture_ddp.py, RESULTS.md): NCCL kernels fill 86% of the window while the
    rank waits for its peer, which is not the GPU being the bottleneck."""
    from gtop.analysis.diagnosis.verdict import decide

    seconds = {"G:COMP": 0.0097, "G:XFER": 0.0002, "G:COMM": 2.997, "H:CTRL": 0.173}
    verdict = decide(seconds, 3.50)
    assert verdict is not None and verdict.kind == "communication-bound"
    assert verdict.cause == "G:COMM" and "slower rank" in verdict.fix
    busy = decide({"G:COMP": 3.0, "G:COMM": 0.2}, 3.5)
    assert busy is not None and busy.kind == "gpu-bound"


def test_verdict_quotes_the_line_of_the_call() -> None:
    """Stacks sampled with lines: the evidence and the fix name ``file:line (function)``
    of the innermost Python frame; recordings without lines read as before."""
    stack = "OFF_GPU;H:WAIT_GPU;main (train.py:10);step (train.py:88);cudaStreamSynchronize"
    verdict = decide({"G:COMP": 0.5, "H:WAIT_GPU": 2.5}, 3.0, [(stack, 2.4)])
    assert verdict is not None and verdict.kind == "sync-bound"
    assert "waiting for the GPU at train.py:88 (step)" in verdict.evidence
    assert verdict.fix.endswith("(at train.py:88 (step))")
    old = decide({"G:COMP": 0.5, "H:WAIT_GPU": 2.5}, 3.0, [(stack.replace(":88", ""), 2.4)])
    assert not any(" at train.py" in e for e in old.evidence)
    assert old.fix.endswith("(at step (train.py))")
