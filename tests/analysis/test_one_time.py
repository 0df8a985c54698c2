"""One-time phases named from their stacks (issue 25): compilation, autotuning,
checkpoints and evaluation passes, and the window that leaves them out."""

from __future__ import annotations

import numpy as np
import pytest

from gtop.analysis.window.active_window import Window
from gtop.analysis.window.one_time import KINDS, Phase, classify, find_phases, outside
from gtop.recordings.clipped import _ONE_TIME, active, after_one_time, choose, one_time
from gtop.recordings.reader import Recording
from tests.analysis.recordings import RECORDINGS

COMPILE = [
    "<module> (job.py)",
    "main (job.py)",
    "_fn (torch/_dynamo/eval_frame.py)",
    "__call__ (torch/_dynamo/convert_frame.py)",
    "_compile (torch/_dynamo/convert_frame.py)",
    "compile_fx (torch/_inductor/compile_fx.py)",
]
AUTOTUNE = [*COMPILE, "benchmark_all_configs (torch/_inductor/runtime/triton_heuristics.py)"]
STEADY = [  # a compiled step, every time: dynamo's frame hook and Triton's launcher
    "main (job.py)",
    "_fn (torch/_dynamo/eval_frame.py)",
    "call (output_code.py)",
    "run (torch/_inductor/runtime/triton_heuristics.py)",
]


@pytest.mark.parametrize(
    "frames, kind",
    [
        (COMPILE, "compilation"),
        (AUTOTUNE, "autotuning"),
        (["main (x.py)", "llvm::PMDataManager::initializeAnalysisImpl"], "compilation"),
        (["train (x.py)", "save (torch/serialization.py)"], "checkpoint"),
        (["main (job.py:12)", "compile_fx (compile_fx.py:1630)"], "compilation"),  # lines
        (["main (job.py:12)", "_fn (eval_frame.py:655)", "call (output_code.py:9)"], None),
        (["train (x.py)", "evaluate (x.py)", "forward (model.py)"], "evaluation"),
        (STEADY, None),
        (["<module> (job.py)", "<module> (torch/_dynamo/convert_frame.py)"], None),  # import
        (["main (x.py)", "_compile (re.py)"], None),
        (["_Py_HashBytes"], None),
        # a compiled step's forward (H200, torch 2.11): aot_autograd.py's runtime wrapper
        # is no compile; its compile entry and stages are
        (
            [
                "step (compile_mlp.py:52)",
                "aot_module_simplified.<locals>.forward (torch/_functorch/aot_autograd.py:1200)",
                "CompiledFxGraph.__call__ (torch/_inductor/output_code.py:613)",
            ],
            None,
        ),
        (
            [
                "aot_module_simplified (torch/_functorch/aot_autograd.py:1187)",
                "aot_stage2_autograd (torch/_functorch/_aot_autograd/graph_compile.py:1570)",
            ],
            "compilation",
        ),
    ],
)
def test_classify(frames: list[str], kind: str | None) -> None:
    got = classify(frames)
    assert (got.name if got else None) == kind


def test_only_the_compile_recording_has_one() -> None:
    """None of the committed recordings but the torch.compile job's compiles, autotunes,
    saves or evaluates: their windows stay as they were (torch's import of
    convert_frame.py is not a compile); compile-mlp.gtop's are its compile and autotuning."""
    for path in sorted(RECORDINGS.rglob("*.gtop")):
        with Recording(path) as rec:
            kinds = [p.kind.name for p in one_time(rec)]
        want = ["compilation", "autotuning"] if path.name == "compile-mlp.gtop" else []
        assert kinds == want, path.name


def test_a_compile_span_is_found_and_left_out() -> None:
    """item-every-step's own samples, those of 0.3-1.8 s into its window given a compile
    stack (as if the loop had compiled then): one compilation phase of ~1.5 s, and the
    window that leaves it out is the larger part after it."""
    with Recording(RECORDINGS / "fixes" / "item-every-step.gtop") as rec:
        samples = rec.read("cpu_sample")
        stacks = {int(e.key): e.value["frames"] for e in rec.entities() if e.kind == "stack"}
        window = choose(rec)
    t0 = int(samples["t_ns"][0])
    fake = max(stacks) + 1
    stacks[fake] = COMPILE
    ids = samples["stack_id"].astype(np.int64)
    span = (samples["t_ns"] >= window.t0 + 300_000_000) & (
        samples["t_ns"] < window.t0 + 1_800_000_000
    )
    ids[span] = fake
    # another process (a compile worker) compiling briefly 0.1-0.5 s after: its own span,
    # too short to be a phase, and not merged into the main process's
    pids = samples["pid"].copy()
    worker = (samples["t_ns"] >= window.t0 + 1_900_000_000) & (
        samples["t_ns"] < window.t0 + 2_300_000_000
    )
    ids[worker], pids[worker] = fake, pids.max() + 1
    (phase,) = find_phases(samples["t_ns"], pids, ids, stacks)
    assert phase.kind.name == "compilation"
    assert phase.seconds == pytest.approx(1.5, abs=0.1)
    assert phase.samples == int(span.sum())
    assert outside(window.t0, window.t1, [phase]) == [(window.t0, phase.t0), (phase.t1, window.t1)]
    assert outside(window.t0, window.t1, []) == [(window.t0, window.t1)]
    assert t0 <= phase.t0


def test_the_window_is_the_piece_with_the_gpu_work() -> None:
    """Of the pieces a compile leaves, the one with the GPU's work is the steady state,
    not the longest: item-every-step's active window, a compile across all of it but its
    last 0.5 s and its first 4 s less 1 ms (where the GPU is idle, as in a job that
    builds its model on the CPU before compiling). On the H200, compile_mlp.py's window
    was its 7 s of setup, not its 1 s of steady steps."""
    with Recording(RECORDINGS / "fixes" / "item-every-step.gtop") as rec:
        act = active(rec)
        idle_end = act.t0 + 1_000_000  # 1 ms after the first GPU work
        phase = Phase(KINDS[1], idle_end, act.t1 - 500_000_000, 100)
        (long, short) = outside(act.t0 - 4_000_000_000, act.t1, [phase])
        assert long[1] - long[0] > short[1] - short[0]
        _ONE_TIME[rec] = [phase]
        got = after_one_time(rec, Window(act.t0 - 4_000_000_000, act.t1, act.kind))
    assert (got.t0, got.t1) == short
