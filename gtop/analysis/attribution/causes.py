"""The causes that partition a unit's wall clock, and the four off panels (names shared by
the engine, the report, the flamegraph and the views)."""

from __future__ import annotations

from enum import IntEnum

from gtop.analysis.attribution.untraced import SAMPLE_ABOVE


class Cause(IntEnum):
    G_COMP = 0
    G_XFER = 1
    H_CTRL = 2
    H_APP = 3
    H_WAIT_GPU = 4
    H_IO = 5
    """Blocked in, or on-CPU inside, an I/O syscall (file or network)."""
    OFF_CPU = 6
    G_QUEUE = 7
    G_STALL = 8
    UNKNOWN = 9
    """Off-GPU with no host data for the charged thread (or no thread to charge)."""
    G_COMM = 10
    """Communication kernels (NCCL) executing. Appended: recordings store cause codes."""
    NOT_TRACED = 11
    """Inside a span in which the agent traced none of the unit's CUDA activity (kernel
    sampling's off phase): neither on- nor off-GPU, left out of every share."""
    GTOP = 12
    """gtop's own code inside the target (the probes' launch hooks, CUPTI's buffer
    callbacks), as its agent timed it: taken out of the host's on-CPU causes of the same
    window (:mod:`gtop.analysis.attribution.own_cost`), never the verdict's cause."""


LABELS = (
    "G:COMP",
    "G:XFER",
    "H:CTRL",
    "H:APP",
    "H:WAIT_GPU",
    "H:IO",
    "OFF_CPU",
    "G:QUEUE",
    "G:STALL",
    "UNKNOWN",
    "G:COMM",
    "NOT_TRACED",
    "GTOP",
)
ON_CAUSES = (Cause.G_COMP, Cause.G_XFER, Cause.G_COMM)
OWN_CAUSES = (Cause.GTOP,)
"""gtop's own cost: off-GPU time, but no partition segment carries it (it is charged on
a breakdown, :mod:`gtop.analysis.attribution.own_cost`), so it is neither in :data:`OFF_CAUSES` nor
a cause the verdict may name."""
OFF_CAUSES = tuple(
    c for c in Cause if c not in ON_CAUSES and c != Cause.NOT_TRACED and c not in OWN_CAUSES
)
PANELS = ("OFF-CPU^dep", "OFF-CPU^queue", "OFF-GPU^dep", "OFF-GPU^queue")

PHRASES = (
    "GPU computing",
    "copying data",
    "launching kernels",
    "Python/CPU work",
    "waiting for the GPU",
    "file/network I/O",
    "sleeping/blocked",
    "GPU queue",
    "GPU dependency wait",
    "no host data",
    "communicating (NCCL)",
    "not traced (sampled)",
    "gtop (overhead)",
)
"""Each cause in plain words, in :class:`Cause` order: what a view shows first, with the
code (:data:`LABELS`) beside it."""

EXPLANATIONS = (
    "Kernels executing on the GPU.",
    "Memory copies or memsets executing on the GPU (host<->device, device<->device).",
    "A host thread on-CPU inside the CUDA runtime or driver: launching kernels, "
    "allocating, setting up copies. Usual fix: fewer, larger launches; CUDA graphs.",
    "A host thread on-CPU in application code (Python, data preparation) while the GPU "
    "has nothing to run. Usual fix: move the work to the GPU or overlap it.",
    "A host thread blocked or polling in a CUDA synchronise (.item(), .cpu(), "
    "cudaStreamSynchronize) while the GPU is idle: the host waits for work it then has "
    "to submit. Usual fix: remove the sync or move it out of the loop.",
    "A host thread blocked in, or on-CPU inside, a file or network syscall. Usual fix: "
    "prefetch, more DataLoader workers, faster storage.",
    "A host thread off-CPU for another reason: a lock, a sleep, a queue wait, or "
    "runnable but waiting for a core.",
    "Work was submitted to the GPU but has not started yet.",
    "Work on a stream waits for another stream or event on the GPU.",
    "The GPU was idle and gtop had no host data to say why (before the target started "
    "or outside its threads).",
    "Collective communication kernels (NCCL: all-reduce, all-gather, send/recv) executing "
    "and no compute kernel at the same time; the Ranks tab shows how much of it waits "
    "for a slower rank. Usual fix: overlap communication with compute (DDP buckets, "
    "FSDP prefetch), balance the ranks' work.",
    "gtop traced none of the target's CUDA activity here: above "
    f"{SAMPLE_ABOVE:,} kernels/s it "
    "traces kernels in a duty cycle (on for part of each second) to keep its cost to "
    "the target near 2%. This time is neither GPU-busy nor idle; shares give it the "
    "mix of the traced part of its second. `--trace-every-kernel` traces every kernel "
    "(at a higher cost).",
    "gtop's own code running inside the target: the PTX probes' launch hooks and CUPTI's "
    "buffer callbacks on its launching threads, as gtop's agent timed them. This is the "
    "profiler's cost, not the program's: it is taken out of the Python/CPU work and "
    "kernel-launching time of the same window and never named as the verdict's cause.",
)
"""One sentence per cause, in :class:`Cause` order: the legend's text."""
