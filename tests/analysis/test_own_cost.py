"""gtop's own cost inside the target is its own cause (``GTOP``), never the program's,
on real recordings made with the agent (default mode, H100/H200)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gtop.analysis.attribution.causes import LABELS, PHRASES, Cause
from gtop.analysis.attribution.own_cost import charge, own_seconds
from gtop.analysis.diagnosis.verdict import from_entry
from gtop.core.hub import Entity
from gtop.recordings.reader import Recording
from tests.reports import report_of

RECORDINGS = Path(__file__).resolve().parents[2] / "recordings"


def _report(name: str) -> tuple[dict, list[Entity]]:
    report = report_of(RECORDINGS / name)
    with Recording(RECORDINGS / name) as rec:
        report["t0_ns"] = rec.time_range()[0]
        return report, rec.entities("agent_cost")


def test_the_agents_callback_time_is_charged_to_gtop() -> None:
    """constructed-tiny (default mode): CUPTI's buffer callbacks ran on the launching
    thread; the report moves the agent's own timing of them out of launching kernels."""
    report, costs = _report("default-mode/constructed-tiny.gtop")
    entry = report["gpu"]["0"]
    window = report["window"]
    t0 = report["t0_ns"] + round(window["from_s"] * 1e9)
    own = own_seconds(costs, t0, report["t0_ns"] + round(window["to_s"] * 1e9))
    assert 0 < own < costs[-1].value["callback_s"]  # the steady window's part of it
    assert entry["gtop_s"] == pytest.approx(own, rel=1e-3)
    assert entry["off_s"]["GTOP"] == pytest.approx(own, rel=1e-3)  # H:CTRL held enough
    total = sum(entry["on_s"].values()) + sum(entry["off_s"].values())
    assert total == pytest.approx(entry["duration_s"], abs=1e-6)
    assert report["verdict"]["cause"] == "H:CTRL"  # the program's cause stays its own


def test_counters_interpolate_and_count_from_the_agents_start() -> None:
    _, costs = _report("default-mode/constructed-sleep.gtop")
    first, last = costs[0], costs[-1]
    start = first.t_ns - int(first.value["elapsed_s"] * 1e9)
    whole = own_seconds(costs, start - 10**9, last.t_ns + 10**9)
    assert whole == pytest.approx(last.value["callback_s"])
    halves = own_seconds(costs, start, (start + last.t_ns) // 2) + own_seconds(
        costs, (start + last.t_ns) // 2, last.t_ns
    )
    assert halves == pytest.approx(whole)
    assert own_seconds(costs, start - 10**9, start) == 0


def test_a_probe_never_turns_sleeping_into_python_work() -> None:
    """Issue 23's Triton loop with block_sched on every launch: the target's main
    thread spent most of its sleep in gtop's probe code, which read as Python/CPU work
    (91%) and made that the verdict. On a real sleeping loop (constructed-sleep), the
    same shift, timed by the agent, is gtop's: the verdict stays sleeping/blocked."""
    report, _ = _report("default-mode/constructed-sleep.gtop")
    entry = {**report["gpu"]["0"]}
    entry["on"], entry["off"] = dict(entry["on_s"]), dict(entry["off_s"])
    entry.pop("off_s"), entry.pop("on_s")
    assert from_entry(entry).kind == "blocked"
    hooks = 0.8 * entry["off"]["OFF_CPU"]  # the probe's hooks, where the sleep was
    entry["off"]["OFF_CPU"] -= hooks
    entry["off"]["H:APP"] += hooks
    assert from_entry(entry).kind == "host-compute"  # what gtop said before: wrong
    charged = charge(entry, hooks)
    verdict = from_entry(charged)
    assert verdict.kind == "blocked" and verdict.cause == "OFF_CPU"
    before = entry["off"].get(LABELS[Cause.GTOP], 0.0)  # the callbacks the report charged
    assert charged["off"][LABELS[Cause.GTOP]] == pytest.approx(before + hooks)
    assert any(e.startswith(PHRASES[Cause.GTOP]) for e in verdict.evidence)
    assert sum(charged["off"].values()) == pytest.approx(sum(entry["off"].values()))


def test_charge_takes_only_what_the_host_causes_hold() -> None:
    entry = {"off": {"H:APP": 0.2, "H:CTRL": 0.1, "OFF_CPU": 1.0}}
    out = charge(entry, 0.5)
    assert out["off"] == pytest.approx({"H:APP": 0, "H:CTRL": 0, "OFF_CPU": 1.0, "GTOP": 0.3})
    assert out["gtop_s"] == 0.5
    assert "GTOP" not in charge(entry, 0.0)["off"]


def test_flamegraphs_mark_gtops_own_frames() -> None:
    """The frames issue 23 saw on top of the target's stacks: the agent's private copy
    (``_gtop_<hex>``) and the C shim are marked; the program's frames are not."""
    from gtop.analysis.attribution.host_window import frames_of

    stack = [
        "<module> (loop.py)",
        "run (triton/runtime/jit.py)",
        "_enter (_gtop_0123456789abcdef/agent/triton_probes.py)",
        "decode (/tmp/x/_gtop_0123456789abcdef/probes/engine/copyback.py)",
        "gtop_shim_completed",
    ]
    out = frames_of(1, {1: stack})
    assert out[:2] == stack[:2]
    assert out[2:] == ["[gtop] " + f for f in stack[2:]]


def test_gpu_flamegraph_charges_gtop_as_the_breakdown_does() -> None:
    """The exported GPU-centric flamegraph of a default-mode recording: its GTOP stacks
    add up to the report's GTOP, taken from H:CTRL's stacks, the total unchanged."""
    from gtop.recordings.exporters.profiles import gpu_profiles
    from gtop.recordings.exporters.window import report_window

    report, _ = _report("default-mode/constructed-tiny.gtop")
    with Recording(RECORDINGS / "default-mode/constructed-tiny.gtop") as rec:
        (profile,) = list(gpu_profiles(report_window(rec)[0]))
    by_cause: dict[str, int] = {}
    for path, ns in profile.stacks.items():
        if path[0] == "OFF_GPU":
            by_cause[path[1]] = by_cause.get(path[1], 0) + ns
    off = report["gpu"]["0"]["off_s"]
    assert by_cause["GTOP"] / 1e9 == pytest.approx(off["GTOP"], abs=2e-6)
    assert by_cause["H:CTRL"] / 1e9 == pytest.approx(off["H:CTRL"], abs=2e-6)


def test_charge_folded_takes_gtops_own_stacks_first() -> None:
    from gtop.analysis.attribution.own_cost import charge_folded

    hook = "main (loop.py);[gtop] _enter (_gtop_0123456789abcdef/agent/x.py)"
    folded = {
        "ON_GPU;G:COMP;mm": 100,
        f"OFF_GPU;H:APP;{hook}": 30,
        "OFF_GPU;H:APP;main (loop.py);work (loop.py)": 60,
        "OFF_GPU;H:APP;main (loop.py);other (loop.py)": 20,
        "OFF_GPU;H:CTRL;main (loop.py)": 50,
    }
    out = charge_folded(folded, 60)
    assert sum(out.values()) == sum(folded.values())
    assert (
        out["OFF_GPU;GTOP;main (loop.py);[gtop] _enter (_gtop_0123456789abcdef/agent/x.py)"] == 30
    )
    assert out["OFF_GPU;GTOP;main (loop.py);work (loop.py)"] == 23  # 30 in proportion 60:20
    assert out["OFF_GPU;GTOP;main (loop.py);other (loop.py)"] == 7
    assert out["OFF_GPU;H:CTRL;main (loop.py)"] == 50
    everything = charge_folded(folded, 10**6)
    assert sum(v for k, v in everything.items() if k.startswith("OFF_GPU;GTOP")) == 160
