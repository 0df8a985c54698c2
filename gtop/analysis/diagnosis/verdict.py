"""The verdict: the dominant reason a GPU sits idle, in plain words, with its evidence
and the usual fix. One rule for every path (``gtop report``, the UI live or replayed):
it reads only a breakdown (seconds per cause), the widest off-GPU folded stacks and two
kernel rates, which every path has.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from gtop.analysis.attribution.causes import (
    EXPLANATIONS,
    LABELS,
    OFF_CAUSES,
    ON_CAUSES,
    PHRASES,
    Cause,
)
from gtop.analysis.attribution.untraced import SAMPLE_ABOVE
from gtop.core.pyframe import is_python, parse

GPU_BOUND_GAR = 0.8
"""At or above this GPU Active Ratio the GPU itself is the bottleneck."""
INPUT_FRAMES = re.compile(
    r"torch/utils/data/|DataLoaderIter|\(dataloader\.py\)|_worker_loop|_pin_memory_loop"
    r"|multiprocessing/queues"
)
"""Frames that mark a thread waiting on, or working for, a DataLoader."""
MIN_SHARE = 0.05
"""A known cause smaller than this share of the window does not outweigh missing host
data (UNKNOWN) in the verdict."""
SYSCALL_ENTRY = "entry_SYSCALL_64_after_hwframe"
OWN_SAID = 0.005
"""gtop's own cost (``GTOP``) from this share of the window up is said in the evidence."""

FIXES = {
    "launch-bound": "capture the step in a CUDA graph (torch.cuda.CUDAGraph) or use "
    'torch.compile(mode="reduce-overhead"); fewer, larger kernels',
    "input-bound": "more DataLoader num_workers, pin_memory=True, and make the workers' "
    "per-sample work cheaper",
    "sync-bound": "remove the synchronising call from the loop (.item(), .cpu(), "
    "synchronize) or move it off the hot path",
    "host-compute": "move this host work to the GPU, or overlap it with GPU work",
    "io-bound": "prefetch or cache the data, more DataLoader workers, faster storage",
    "blocked": "find what the thread waits for (sleep, lock, queue) and overlap or remove it",
    "gpu-queue": "submitted work waits to start: many small kernels (fuse them, e.g. "
    "torch.compile) or other work ahead on the GPU (other streams or processes)",
    "gpu-dependency": "streams wait on each other's events: overlap independent work",
    "gpu-bound": "the GPU is the bottleneck: speed up the top kernels",
    "communication-bound": "if the Ranks section names a slower rank, the others wait for "
    "it in the collectives: balance the ranks' work (data, shards); else overlap "
    "communication with compute (DDP bucket size, FSDP prefetch)",
    "host-function": "keep host functions off the stream the GPU works on: do that host work "
    "on a CPU thread (or on the GPU) and synchronise with an event",
    "no-host-data": "gtop saw no CUDA activity or host threads of the target here: record "
    "it with the agent (gtop record -- CMD); gtop doctor says what works on the machine",
}
"""The usual fix per kind of verdict."""

AFTER_SYNC_SHARE = 0.5
"""When at least this share of the host-caused idle time opens at a synchronisation's
end, the verdict says the synchronising call is what leaves the GPU idle."""
HOST_CAUSES = (Cause.H_CTRL, Cause.H_APP, Cause.H_IO, Cause.OFF_CPU)

KIND_OF_CAUSE = {
    Cause.H_CTRL: "launch-bound",
    Cause.H_APP: "host-compute",
    Cause.H_WAIT_GPU: "sync-bound",
    Cause.H_IO: "io-bound",
    Cause.OFF_CPU: "blocked",
    Cause.G_QUEUE: "gpu-queue",
    Cause.G_STALL: "gpu-dependency",
    Cause.UNKNOWN: "no-host-data",
}


@dataclass(frozen=True)
class Verdict:
    """Why the GPU was idle over a window (``cause`` a :data:`LABELS` entry, or
    ``G:COMP`` when GPU-bound), in one ``headline`` with its ``evidence`` and ``fix``."""

    kind: str
    cause: str
    phrase: str
    explanation: str
    share_of_window: float
    gar: float
    headline: str
    evidence: tuple[str, ...]
    fix: str
    top_frames: tuple[str, ...]
    launches_per_s: float | None
    mean_kernel_us: float | None

    def line(self) -> str:
        """The verdict in one line (the UI's, above the tabs)."""
        return f"{self.headline} · fix: {self.fix}"

    def as_json(self) -> dict:
        out = asdict(self)
        out["evidence"] = list(self.evidence)
        out["top_frames"] = list(self.top_frames)
        return out


def stack_frames(stack: str) -> list[str]:
    """The frames of a folded off-GPU stack (``OFF_GPU;CAUSE;frame;...``), outermost first."""
    return stack.split(";")[2:]


def top_frames(frames: Sequence[str], n: int = 3) -> tuple[str, ...]:
    """The innermost ``n`` Python frames of a stack, else its innermost user-space frames
    (those before the kernel's syscall entry), innermost last."""
    py = [f for f in frames if is_python(f)]
    if py:
        return tuple(py[-n:])
    user = list(frames)
    if SYSCALL_ENTRY in user:
        user = user[: user.index(SYSCALL_ENTRY)]
    user = [f for f in user if f != "[unknown]"]
    return tuple(user[-n:])


def _line(frame: str) -> str | None:
    """``file.py:88 (func)`` of a Python frame that has its line, else None."""
    parsed = parse(frame)
    return f"{parsed.file}:{parsed.line} ({parsed.func})" if parsed and parsed.line else None


def _sync_line(sync_stacks: Sequence[tuple[str, float]]) -> str | None:
    """``file.py:88 (func)`` of the widest synchronising call's innermost Python frame."""
    for stack, _seconds in sync_stacks:
        py = [f for f in top_frames(stack.split(";")) if is_python(f)]
        line = _line(py[-1]) if py else None
        if line:
            return line
    return None


def syscall(frames: Sequence[str]) -> str | None:
    """The system call a stack is in: the user frame just before the kernel's entry."""
    if SYSCALL_ENTRY in frames:
        i = list(frames).index(SYSCALL_ENTRY)
        return frames[i - 1] if i else None
    return None


def _cause_stacks(stacks: Sequence[tuple[str, float]], label: str) -> list[tuple[str, float]]:
    prefix = f"OFF_GPU;{label}"
    return [(s, w) for s, w in stacks if s == prefix or s.startswith(prefix + ";")]


def _input_bound(stacks: Sequence[tuple[str, float]]) -> bool:
    """Most of the cause's stacked time that has Python frames is in DataLoader frames
    (stacks without Python frames, e.g. a lock wait py-spy did not catch, say nothing)."""
    with_py = [(s, w) for s, w in stacks if any(is_python(f) for f in stack_frames(s))]
    loader = sum(w for s, w in with_py if INPUT_FRAMES.search(s))
    return mostly_input(loader, sum(w for _, w in with_py))


def mostly_input(loader_s: float, python_s: float) -> bool:
    """DataLoader frames hold most of the waiting time that has Python frames (``python_s``
    of it, ``loader_s`` in DataLoader frames): the waits without Python frames are taken
    to be the same DataLoader waits (the verdict's and the what-if's one rule)."""
    return loader_s > 0 and loader_s >= 0.5 * python_s


def _rates(launches_per_s: float | None, mean_kernel_us: float | None) -> str | None:
    parts = []
    if launches_per_s is not None:
        parts.append(f"{launches_per_s:,.0f} kernels/s")
    if mean_kernel_us is not None:
        parts.append(f"mean kernel time {mean_kernel_us:,.1f} µs")
    return ", ".join(parts) or None


def decide(
    seconds: Mapping[str, float],
    duration_s: float,
    stacks: Sequence[tuple[str, float]] = (),
    launches_per_s: float | None = None,
    mean_kernel_us: float | None = None,
    after_sync_s: float = 0.0,
    host_functions: int = 0,
    untraced_s: float = 0.0,
    sync_stacks: Sequence[tuple[str, float]] = (),
) -> Verdict | None:
    """The verdict over a window of ``duration_s`` given seconds per cause label (on and
    off), the widest folded off-GPU stacks with their seconds, kernel rates (over the
    traced time), the host-caused idle time in gaps a synchronisation opened, the number
    of host functions launched on streams (``cuLaunchHostFunc``) and the seconds kernel
    sampling left untraced (their causes estimated in ``seconds``; said in the
    evidence), and the synchronising calls' stacks (``;``-joined frames, outermost first)
    with the idle time after them; None when nothing was traced."""
    if duration_s <= 0 or untraced_s >= duration_s:
        return None
    verdict = _decide(
        seconds,
        duration_s,
        stacks,
        launches_per_s,
        mean_kernel_us,
        after_sync_s,
        host_functions,
        sync_stacks,
    )
    if untraced_s > 0:
        traced = 1 - untraced_s / duration_s
        line = (
            f"kernels traced {traced:.0%} of the window (gtop samples above "
            f"{SAMPLE_ABOVE:,} kernels/s; the rest estimated from each second's traced part)"
        )
        verdict = replace(verdict, evidence=(*verdict.evidence, line))
    return verdict


def _decide(
    seconds: Mapping[str, float],
    duration_s: float,
    stacks: Sequence[tuple[str, float]],
    launches_per_s: float | None,
    mean_kernel_us: float | None,
    after_sync_s: float,
    host_functions: int,
    sync_stacks: Sequence[tuple[str, float]],
) -> Verdict:
    """:func:`decide` (``duration_s`` > 0)."""
    on = sum(seconds.get(LABELS[c], 0.0) for c in ON_CAUSES)
    gar = on / duration_s
    rates = _rates(launches_per_s, mean_kernel_us)
    comm = seconds.get(LABELS[Cause.G_COMM], 0.0)
    if gar >= GPU_BOUND_GAR and comm > on - comm:
        return Verdict(
            kind="communication-bound",
            cause=LABELS[Cause.G_COMM],
            phrase=PHRASES[Cause.G_COMM],
            explanation=EXPLANATIONS[Cause.G_COMM],
            share_of_window=comm / duration_s,
            gar=gar,
            headline=f"mostly communicating (NCCL), {comm / duration_s:.0%} of the time: "
            "the GPU is busy in collectives, not computing",
            evidence=(f"NCCL kernels {comm:.2f} s of {duration_s:.2f} s",),
            fix=FIXES["communication-bound"],
            top_frames=(),
            launches_per_s=launches_per_s,
            mean_kernel_us=mean_kernel_us,
        )
    if gar >= GPU_BOUND_GAR:
        evidence = [f"GPU busy {gar:.0%} of {duration_s:.2f} s"]
        if rates:
            evidence.append(rates)
        return Verdict(
            kind="gpu-bound",
            cause=LABELS[Cause.G_COMP],
            phrase=PHRASES[Cause.G_COMP],
            explanation=EXPLANATIONS[Cause.G_COMP],
            share_of_window=gar,
            gar=gar,
            headline=f"GPU-bound: the GPU was busy {gar:.0%} of the time",
            evidence=tuple(evidence),
            fix=FIXES["gpu-bound"],
            top_frames=(),
            launches_per_s=launches_per_s,
            mean_kernel_us=mean_kernel_us,
        )
    known = [c for c in OFF_CAUSES if c != Cause.UNKNOWN]
    cause = max(known, key=lambda c: (seconds.get(LABELS[c], 0.0), -c))
    unknown = seconds.get(LABELS[Cause.UNKNOWN], 0.0)
    if unknown > seconds.get(LABELS[cause], 0.0) < MIN_SHARE * duration_s:
        cause = Cause.UNKNOWN
    label = LABELS[cause]
    idle = seconds.get(label, 0.0)
    share = idle / duration_s
    own = _cause_stacks(stacks, label)
    kind = KIND_OF_CAUSE[cause]
    if cause in (Cause.OFF_CPU, Cause.H_APP) and _input_bound(own):
        kind = "input-bound"
    framed = [(s, w) for s, w in own if stack_frames(s)]
    widest = framed[0] if framed else None
    frames = stack_frames(widest[0]) if widest else []
    top = top_frames(frames)
    what = {
        "input-bound": "waiting for input data (DataLoader)",
        "launch-bound": "launching kernels (launch-bound)",
        "sync-bound": "waiting for the GPU in a synchronising call (sync-bound)",
    }.get(kind, PHRASES[cause])
    headline = f"GPU idle {1 - gar:.0%}: mostly {what}, {share:.0%} of the time"
    if cause == Cause.UNKNOWN:
        headline = f"GPU idle {1 - gar:.0%}, {share:.0%} of the time with no host data"
    evidence = [f"{PHRASES[cause]} ({label}): {idle:.2f} s of {duration_s:.2f} s ({share:.0%})"]
    if cause != Cause.UNKNOWN and unknown > MIN_SHARE / 5 * duration_s:
        evidence.append(f"no host data for {unknown:.2f} s ({unknown / duration_s:.0%})")
    own = seconds.get(LABELS[Cause.GTOP], 0.0)
    if own >= OWN_SAID * duration_s:
        evidence.append(
            f"{PHRASES[Cause.GTOP]}: {own:.2f} s ({own / duration_s:.0%}) in gtop's own code "
            "on the target's threads (probes, CUPTI callbacks), not the program's: left out "
            "of this verdict"
        )
    if rates:
        evidence.append(rates)
    if widest:
        where = " > ".join(top) if top else "(no frames)"
        evidence.append(f"top stack ({widest[1]:.2f} s): {where}")
        call = syscall(frames)
        if cause == Cause.H_IO and call:
            evidence.append(f"system call: {call}")
    fix = FIXES[kind]
    py = [f for f in top if is_python(f)]
    line = _line(py[-1]) if py else None
    if line:  # where in the user's code: "at item_sync.py:61 (train)"
        evidence.append(f"{PHRASES[cause]} at {line}")
    if kind in ("sync-bound", "host-compute") and top:
        fix += f" (at {line or top[-1]})"
    elif kind == "launch-bound" and py:  # the Python code whose launches to capture
        fix += f" (around {line or py[-1]})"
    host = sum(seconds.get(LABELS[c], 0.0) for c in (*HOST_CAUSES, Cause.H_WAIT_GPU))
    if cause == Cause.H_WAIT_GPU:
        evidence.append(
            f"the stream ran {host_functions:,} host functions (cuLaunchHostFunc): the GPU "
            "waits for each to return while the host waits for the GPU"
            if host_functions
            else "the GPU had nothing to run while the host waited: the stream was blocked "
            "on something that is not GPU work (a host function, or an event from elsewhere)"
        )
        if host_functions:
            headline = headline.replace("(sync-bound)", "(a stream blocked on a host function)")
            fix = FIXES["host-function"]
    if cause in HOST_CAUSES and host > 0 and after_sync_s >= AFTER_SYNC_SHARE * host:
        sync_line = _sync_line(sync_stacks)
        at = f" at {sync_line}" if sync_line else ""
        if kind in ("host-compute", "launch-bound"):
            headline += ", after each synchronising call"
        evidence.append(
            f"{after_sync_s / host:.0%} of the host-caused idle time follows a synchronising "
            f"call (.item(), .cpu(), synchronize){at}: the host waits for the GPU to drain, "
            "then leaves it idle"
        )
        if kind in ("host-compute", "launch-bound"):
            fix += f"; or move the synchronising call{at} so this work overlaps the GPU's"
    return Verdict(
        kind=kind,
        cause=label,
        phrase=PHRASES[cause],
        explanation=EXPLANATIONS[cause],
        share_of_window=share,
        gar=gar,
        headline=headline,
        evidence=tuple(evidence),
        fix=fix,
        top_frames=top,
        launches_per_s=launches_per_s,
        mean_kernel_us=mean_kernel_us,
    )


def from_entry(
    entry: Mapping[str, Any], kernels: int = 0, kernel_ns: int = 0, host_functions: int = 0
) -> Verdict | None:
    """The verdict of one unit's breakdown as ``gtop report --json`` gives it per device
    (:func:`gtop.analysis.report.gpu_report.unit_summary` plus ``top_off_gpu_stacks``), with the
    number of kernels in the window, their summed time and the host functions launched
    (API records, full mode): the one rule the report and the UI (live or replayed) both
    apply. The kernels are those traced, so their rate is over ``traced_s`` (the window
    less what kernel sampling left untraced)."""
    duration = entry["duration_s"]
    traced = entry.get("traced_s", duration)
    return decide(
        {**entry["on"], **entry["off"]},
        duration,
        [(s["stack"], s["seconds"]) for s in entry.get("top_off_gpu_stacks", [])],
        launches_per_s=kernels / traced if kernels and traced > 0 else None,
        mean_kernel_us=kernel_ns / kernels / 1e3 if kernels else None,
        after_sync_s=entry.get("after_sync_s", 0.0),
        host_functions=host_functions,
        untraced_s=entry.get("untraced_s", 0.0),
        sync_stacks=[(s["stack"], s["seconds"]) for s in entry.get("sync_stacks", [])],
    )
