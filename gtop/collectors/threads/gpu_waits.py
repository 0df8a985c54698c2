"""The GPU-wait uprobes both kernel tiers share: which blocking CUDA calls are probed, and
attaching them once per library file.

A probe is attached system-wide (every process that maps the file hits it; the tiers keep
only tracked processes' events), not per process: a DataLoader job forks workers that
inherit libcuda's mapping, and probes per process grew to ~90 links each, whose teardown
at exit took 92 s on an H100 (8 workers; gpu_session.sh startup-ablation). Another
process calling a probed function pays the uprobe's trap (~11 us) on a call that blocks
anyway.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable

from gtop.collectors.threads import symbols
from gtop.core.status import ThreadStatus

CUDA_WAITS = {
    # the runtime (torch's libcudart.so.13): it reaches the driver through cuGetProcAddress
    # pointers, not libcuda's exported symbols, so only its own exports see its waits
    "libcudart.so": [
        "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz", "cudaDeviceSynchronize",  # and
        "cudaThreadSynchronize",  # its pre-CUDA-13 alias
        "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy_ptds",
        "cudaMemcpy2D", "cudaMemcpy2D_ptds", "cudaMemcpy3D", "cudaMemcpy3D_ptds",
        "cudaMemcpyPeer", "cudaMemcpyFromSymbol", "cudaMemcpyFromSymbol_ptds",
        "cudaMemcpyToSymbol", "cudaMemcpyToSymbol_ptds",
        # returns only once the copy is done when the host side is pageable memory, as
        # in torch's .item() (cudaMemcpyAsync to the stack, then cudaStreamSynchronize):
        # that is where such a wait is spent
        "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz",
    ],
    # the driver, called directly (ctypes, cuda-bindings) or by a statically linked
    # runtime: every exported variant (_v2, per-thread-stream _ptsz/_ptds)
    "libcuda.so": [
        "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
        "cuCtxSynchronize_v2", "cuEventSynchronize", "cuMemcpy", "cuMemcpy_ptds",
        "cuMemcpyDtoH", "cuMemcpyDtoH_v2", "cuMemcpyDtoH_v2_ptds", "cuMemcpyHtoD",
        "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyDtoD", "cuMemcpyDtoD_v2",
        "cuMemcpyDtoD_v2_ptds", "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds", "cuMemcpy3D_v2",
        "cuMemcpy3D_v2_ptds", "cuMemcpyPeer", "cuMemcpyPeer_ptds", "cuMemcpyDtoHAsync_v2",
        "cuMemcpyDtoHAsync_v2_ptsz",
    ],
}  # fmt: skip
"""Blocking CUDA calls, by library: time inside them is ``BlockReason.GPU_WAIT``, whether
blocked, spinning on CPU, or yielding (runnable). Launches and other asynchronous calls
return without waiting and are not probed (a uprobe costs ~11 us a call), except the
device-to-host async copies, which block when the host memory is pageable (their on-CPU
microseconds when they do not block count as GPU_WAIT too); nor are queries
(``cudaStreamQuery``), which return at once (a loop polling them shows as on-CPU).
Names a library lacks are skipped; nested probed calls count once."""


Attach = Callable[[str, int], None]
"""Installs an entry and a return probe at a file offset; raises on failure."""

RETURN_FIRST = (True, False)
"""The order both tiers attach a function's probes in (``ret``: the return probe
first). The other way
round, a call that starts between the two attaches counts its entry and never its
return, and its thread stays "waiting for the GPU" from then on (found on an H200: a
launch-bound decode calling ``cudaMemcpyAsync`` ~300 times a second read as 34% sync
wait, every second after the attach). A return without its entry is ignored (the depth
stays at 0)."""


class GpuWaitProbes:
    """Finds the probed libraries in target processes and attaches each file's probes once.

    ``attach(path, offset)`` installs an entry and a return probe at a file offset and
    raises on failure (counted as a ``uprobe`` error, the message kept).

    With ``background``, the attaches run on a thread of their own (``gtop-uprobes``), so
    the tier's poll never waits for them: each attach waits for a system-wide lock (see
    :mod:`~gtop.collectors.threads.uprobe_holder`), and ~40 pairs took 0.5-1.9 s against
    one torch process on an H200, which a 1 s ``--duration`` then waited for. :meth:`stop`
    ends the attaching after the pair in progress.
    """

    def __init__(
        self,
        gpu_waits: dict[str, list[str]] | None,
        status: ThreadStatus,
        background: bool = False,
    ) -> None:
        self.gpu_waits = CUDA_WAITS if gpu_waits is None else gpu_waits
        self.status = status
        self.background = background
        self._probed: set[str] = set()
        self._checked: dict[int, float] = {}
        self._todo: queue.SimpleQueue[tuple[str, int, Attach]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def probe(self, pids: Iterable[int], attach: Attach) -> None:
        """Attach probes in files the processes newly mapped (each pid looked at every 2 s:
        a process maps libcuda once CUDA starts); with ``background``, only queue them."""
        for path, offset in self._new_probes(pids):
            if not self.background:
                self._attach(path, offset, attach)
                continue
            self._todo.put((path, offset, attach))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._attach_queued, name="gtop-uprobes", daemon=True
                )
                self._thread.start()

    def stop(self) -> None:
        """Attach nothing more (a pair in progress finishes on the thread)."""
        self._stopping.set()

    def _new_probes(self, pids: Iterable[int]) -> list[tuple[str, int]]:
        now = time.monotonic()
        found = []
        for pid in pids:
            if now - self._checked.get(pid, 0.0) < 2.0:
                continue
            self._checked[pid] = now
            for lib, funcs in self.gpu_waits.items():
                for path in symbols.mapped_files(pid, lib) - self._probed:
                    self._probed.add(path)
                    offsets = symbols.function_offsets(path, funcs).values()
                    found += [(path, offset) for offset in offsets]
        return found

    def _attach_queued(self) -> None:
        while not self._stopping.is_set():
            try:
                path, offset, attach = self._todo.get(timeout=0.2)
            except queue.Empty:
                continue
            self._attach(path, offset, attach)

    def _attach(self, path: str, offset: int, attach: Attach) -> None:
        if self._stopping.is_set():
            return
        try:
            attach(path, offset)
        except (OSError, RuntimeError) as exc:
            self.status.count_error("uprobe")
            self.status.last_error = str(exc)
            return
        self._count(path)

    def _count(self, path: str) -> None:
        counters = self.status.counters
        counters["gpu_wait_probes"] = int(counters.get("gpu_wait_probes", 0)) + 1
        # which libraries: no libcudart here means a static runtime (or none), seen
        # through libcuda's exports only
        libs = set(counters.get("gpu_wait_libs", []))
        counters["gpu_wait_libs"] = sorted(libs | {os.path.basename(path)})
