"""One-time phases named from their stacks: compilation, autotuning, checkpoint saves and
evaluation passes (issue 25). A job that compiles for 12 s and then trains is not
"mostly Python/CPU work": the compile is a cost paid once, with its own remedy, and the
steady state is what follows it.

Each CPU stack sample of the recording's threads is matched against the frames each
phase leaves (:data:`KINDS`, most specific first: frames only that work runs, not the
ones a compiled step passes through every time, such as dynamo's ``eval_frame`` or
Triton's launcher); samples of one kind closer together
than :data:`MERGE_NS` make one span, and a span of at least :data:`MIN_NS` and
:data:`MIN_SAMPLES` samples is a phase. The window the verdict covers is then the
piece of it outside every phase (:func:`outside`) with the most GPU work.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gtop.analysis import intervals as iv


@dataclass(frozen=True)
class Kind:
    """A kind of one-time phase: the frames that mark it and its usual remedy."""

    name: str
    what: str
    frames: re.Pattern[str]
    remedy: str


KINDS = (
    Kind(
        "autotuning",
        "autotuning kernels (Triton autotune, inductor's select_algorithm, cuDNN benchmark)",
        re.compile(
            r"[(/](select_algorithm|autotune_process)\.py(?::\d+)?\)|"
            r"^(benchmark_all_configs|autotune_to_one_config|do_bench\w*|benchmark_choices?"
            r"|\w*Autotuner\._?bench\w*|\w*Autotuner\.benchmark_all_configs) \(|"
            r"cudnnFind\w*|cudnn\w*[Bb]enchmark\w*"
        ),
        "cache the tuning results (TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR on a "
        "persistent disk), or a cheaper mode (torch.compile without max-autotune; "
        "torch.backends.cudnn.benchmark=False for short jobs)",
    ),
    Kind(
        "compilation",
        "compiling (torch.compile: dynamo, AOT autograd, inductor; Triton JIT)",
        re.compile(
            r"[(/](convert_frame|symbolic_convert|output_graph|compile_fx|codecache|"
            r"async_compile|graph_compile|graph_capture|jit_compile_runtime_wrappers|"
            r"lowering|compile_worker\w*)\.py(?::\d+)?\)|"
            r"^(compile_fx\w*|fx_codegen_and_compile|compile_to_module|"
            r"aot_module_simplified) \(|"
            r"^(mlir|llvm)::"
        ),
        "a compile cache that outlives the job (TORCHINDUCTOR_FX_GRAPH_CACHE=1 and "
        "TORCHINDUCTOR_CACHE_DIR, torch.compiler.save_cache_artifacts), or compile "
        "ahead of time (AOTInductor)",
    ),
    Kind(
        "checkpoint",
        "saving a checkpoint",
        re.compile(
            r"[(/]serialization\.py(?::\d+)?\)|torch/distributed/checkpoint/|safetensors|"
            r"^(save_checkpoint|save_pretrained|_save|async_save) \("
        ),
        "save asynchronously (torch.distributed.checkpoint.async_save, or a thread), or less often",
    ),
    Kind(
        "evaluation",
        "an evaluation pass",
        re.compile(r"^(evaluate|evaluation_loop|eval_step|eval_epoch|validate|validation\w*) \("),
        "evaluate less often, on fewer samples, or in another process",
    ),
)
"""The kinds recognised, most specific first (autotuning runs inside compilation)."""

MERGE_NS = 2_000_000_000
"""Samples of one kind closer than this belong to one phase (a compile waits for its
workers, and is sampled only while on-CPU)."""
MIN_NS = 500_000_000
MIN_SAMPLES = 5


@dataclass(frozen=True)
class Phase:
    """A one-time phase found: ``[t0, t1)`` on the recording's clock, its kind, and how
    many stack samples named it."""

    kind: Kind
    t0: int
    t1: int
    samples: int

    @property
    def seconds(self) -> float:
        return (self.t1 - self.t0) / 1e9


def classify(frames: Sequence[str]) -> Kind | None:
    """The kind of one-time work a stack is doing (frames outermost first), or None: the
    most specific kind any of its frames marks."""
    first = min(map(_first_kind, frames), default=len(KINDS))
    return KINDS[first] if first < len(KINDS) else None


@functools.lru_cache(maxsize=1 << 16)
def _first_kind(frame: str) -> int:
    """The index in :data:`KINDS` of the first kind ``frame`` marks, else ``len(KINDS)``.
    A module's top level (``<module> (…)``: importing it) is no such work. Cached: a
    recording's stacks share most of their frames (classifying slow_loader's 1,835
    stacks took 71 ms frame by frame, 10 ms with each frame matched once)."""
    if frame.startswith(IMPORTING):
        return len(KINDS)
    return next((i for i, kind in enumerate(KINDS) if kind.frames.search(frame)), len(KINDS))


IMPORTING = "<module> ("


def find_phases(
    times: np.ndarray,
    pids: np.ndarray,
    stack_ids: np.ndarray,
    stacks: Mapping[int, Sequence[str]],
) -> list[Phase]:
    """The one-time phases in stack samples taken at ``times`` (ns) in processes ``pids``
    with ``stack_ids``, in time order. Spans are merged within a process only: a compile
    worker that wakes once more as the job ends (on the H200, inductor's pool 1-2 s
    after the last step) does not stretch the main process's compile over the steps.
    Autotuning inside a compilation is its own phase only when it stands apart; the
    compilation spans it."""
    ids = np.unique(stack_ids)
    label = {int(s): classify(stacks.get(int(s), ())) for s in ids}
    code = np.array([-1 if label[int(s)] is None else KINDS.index(label[int(s)]) for s in ids])
    if not len(ids) or (code < 0).all():
        return []
    kinds = code[np.searchsorted(ids, stack_ids)]
    order = np.argsort(times, kind="stable")
    times, pids, kinds = times[order], pids[order], kinds[order]
    out: list[Phase] = []
    for k, kind in enumerate(KINDS):
        for pid in np.unique(pids[kinds == k]).tolist():
            out += _spans(times[(kinds == k) & (pids == pid)], kind)
    out.sort(key=lambda p: (p.t0, KINDS.index(p.kind)))
    return _nested_dropped(out)


def _spans(t: np.ndarray, kind: Kind) -> list[Phase]:
    """The phases of one kind in one process's sample times ``t`` (sorted)."""
    if len(t) < MIN_SAMPLES:
        return []
    spans = iv.union(t - MERGE_NS // 2, t + MERGE_NS // 2)
    out = []
    for a, b in zip(spans.starts.tolist(), spans.ends.tolist(), strict=True):
        inside = t[(t >= a) & (t < b)]
        t0, t1 = int(inside[0]), int(inside[-1]) + 1
        if len(inside) >= MIN_SAMPLES and t1 - t0 >= MIN_NS:
            out.append(Phase(kind, t0, t1, len(inside)))
    return out


def _nested_dropped(phases: list[Phase]) -> list[Phase]:
    """Phases with any phase lying inside another one left out (autotuning within a
    compilation is part of that compilation's cost)."""
    return [
        p for p in phases if not any(q is not p and q.t0 <= p.t0 and p.t1 <= q.t1 for q in phases)
    ]


def outside(t0: int, t1: int, phases: Sequence[Phase]) -> list[tuple[int, int]]:
    """The pieces of ``[t0, t1)`` outside every phase, in time order (``[t0, t1)`` itself
    when none overlaps it or when they cover all of it)."""
    if not phases:
        return [(t0, t1)]
    busy = iv.union(np.array([p.t0 for p in phases]), np.array([p.t1 for p in phases]))
    free = iv.complement(iv.clip(busy, t0, t1), t0, t1)
    if not len(free):
        return [(t0, t1)]
    return list(zip(free.starts.tolist(), free.ends.tolist(), strict=True))
