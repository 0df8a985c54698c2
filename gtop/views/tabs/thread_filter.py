"""Which host threads matter: the ones that called CUDA or were busy, never gtop's own
agent thread (recognised by its stack). The Threads and Swimlanes tabs show these first."""

from __future__ import annotations

from typing import Any

import numpy as np

from gtop.core import layouts

BUSY_SHARE = 0.05
"""A thread on a CPU for this share of the window is one that matters."""


def is_gtop_stack(frames: list[str]) -> bool:
    """A stack of gtop's own agent thread: its first frame after the thread bootstrap is
    in ``gtop/`` (``Session.run (gtop/agent/runtime.py)``)."""
    inner = [f for f in frames if not f.startswith("Thread._bootstrap")]
    return (
        bool(frames)
        and frames[0].startswith("Thread._bootstrap")
        and bool(inner)
        and ("(gtop/" in inner[0])
    )


def gtop_tids(tids: np.ndarray, stack_ids: np.ndarray, stacks: dict[int, Any]) -> set[int]:
    """The threads (of ``tids``, each seen with the stack ``stack_ids``) that are gtop's."""
    ours = [k for k, v in stacks.items() if is_gtop_stack(list(v.get("frames", [])))]
    return set(np.unique(tids[np.isin(stack_ids, ours)]).tolist())


def busy_tids(
    tids: np.ndarray, starts: np.ndarray, ends: np.ndarray, on_cpu: np.ndarray, window_ns: int
) -> set[int]:
    """The threads on a CPU (``on_cpu`` marks those intervals) for :data:`BUSY_SHARE`
    of the window."""
    keys, inverse = np.unique(tids[on_cpu], return_inverse=True)
    busy_ns = np.bincount(inverse, weights=(ends - starts)[on_cpu], minlength=len(keys))
    return set(keys[busy_ns >= BUSY_SHARE * window_ns].tolist())


def threads_that_matter(
    intervals: np.ndarray,
    samples: np.ndarray,
    api: np.ndarray,
    stacks: dict[int, Any],
    window_ns: int,
) -> tuple[set[int], set[int]]:
    """``(matter, gtop)`` over THREAD_STATE ``intervals``, CPU ``samples`` and CUDA
    ``api`` rows: the tids that called CUDA or were busy, less gtop's own; and gtop's."""
    gtop = gtop_tids(
        np.concatenate((intervals["tid"], samples["tid"])),
        np.concatenate((intervals["stack_id"], samples["stack_id"])),
        stacks,
    )
    busy = busy_tids(
        intervals["tid"],
        intervals["t_ns"],
        intervals["end_ns"],
        intervals["state"] == layouts.ThreadState.ON_CPU,
        window_ns,
    )
    cuda = set(np.unique(api["tid"]).tolist())
    return (cuda | busy) - gtop, gtop
