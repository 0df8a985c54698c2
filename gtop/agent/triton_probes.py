"""Probe Triton kernels inside the running process, through Triton 3.6's own hooks.

- ``knobs.runtime.add_stages_inspection_hook`` wraps the ``ptx`` stage: a kernel whose
  name matches an enabled selection gets the probe inserted before ptxas.
- ``knobs.runtime.kernel_load_end_hook`` receives the loaded ``CUmodule``: when its PTX
  carries a ``// gtop-probe`` header, a record buffer is bound through its globals.
- ``launch_enter_hook`` arms the probe on every k-th launch only (the instrumented
  kernel runs disarmed in between: capacity 0, nothing written) and ``launch_exit_hook``
  queues the copy-back on a side stream after an event, so the application's stream is
  never synchronised. :meth:`TritonProbes.poll` collects finished copies without blocking.

Triton's compile-cache key does not include the hook in Triton 3.6.0 as published (this
module still answers the ``(key, digest)`` protocol for builds that ask for one), so
while a probe is enabled Triton's cache points at a private directory per probe setting:
instrumented binaries never reach the user's cache. Enabling evicts the matching
``@triton.jit`` kernels from their in-memory caches so their next launch recompiles with
the probe; disabling puts the original compiled kernels back.

torch.compile (Inductor) launches its kernels itself: they are probed when compiled
while a selection is enabled, in this process (``compile_threads=1``) and through Triton's
loader (``use_static_cuda_launcher=False``); toggling means recompiling
(``torch._dynamo.reset()``). Everything fails open: a problem is appended to
:attr:`TritonProbes.errors` and the original kernel runs.
"""

from __future__ import annotations

import gc
import hashlib
import re
import tempfile
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gtop.instrument import ptx
from gtop.instrument.probe import Level
from gtop.instrument.probes import get
from gtop.instrument.rewrite import instrument, read_header

if TYPE_CHECKING:
    from gtop.instrument.runtime import Fence, Pending, ProbeBuffers

DEFAULT_CAPACITY = {"block_sched": 1 << 18, "tensorop": 1 << 18, "mem_trace": 1 << 20}


@dataclass(frozen=True)
class Selection:
    """Which kernels to probe, with what."""

    pattern: str  # regex on the kernel name
    probe: str
    every: int = 1  # probe every k-th launch
    sample: int = 1  # mem_trace: 1 in N accesses
    level: str | None = None
    capacity: int = 0  # records per launch; 0: the probe's default

    def matches(self, name: str) -> bool:
        return re.search(self.pattern, name) is not None


@dataclass(frozen=True)
class Collected:
    """The records of one probed launch."""

    kernel: str
    probe: str
    launch: int  # 1-based launch count of this kernel since it was bound
    header: dict  # the instrumented module's header (kernel ids, tensor-op classes, ...)
    records: np.ndarray
    overflow: int


@dataclass
class _Bound:
    name: str
    selection: Selection
    header: dict
    buffers: ProbeBuffers
    launches: int = 0
    armed: bool = False
    pending: Pending | None = None
    pending_launch: int = 0
    retired: Fence | None = None  # set when disabled: free the buffers once it passed


@dataclass
class _Saved:
    kernel_cache: dict
    key: Any
    kernel: Any  # the original CompiledKernel


class TritonProbes:
    """The in-process probe manager. Thread-safe; hooks are installed only while at
    least one selection is enabled."""

    def __init__(self, max_results: int = 256) -> None:
        self.errors: deque[str] = deque(maxlen=256)  # fail-open problems, newest last
        self.results: deque[Collected] = deque(maxlen=max_results)
        self._selections: list[Selection] = []
        self._bound: dict[int, _Bound] = {}  # CUfunction handle -> state
        self._closing: list[_Bound] = []
        # CUfunction handles of loaded probed kernels (their CompiledKernel.hash equals the
        # original's: Triton's cache key does not see the probe).
        self._instrumented: set[int] = set()
        self._saved: list[_Saved] = []
        self._lock = threading.RLock()
        self._cache_root = Path(tempfile.mkdtemp(prefix="gtop-triton-"))
        self._user_cache_dir: str | None = None
        self._previous_stages: Any = None
        self._installed = False

    # --- control ---------------------------------------------------------------------

    def enable(self, selection: Selection) -> None:
        """Probe the next launches of kernels matching ``selection``."""
        get(selection.probe)  # unknown probe: KeyError now, not at compile time
        with self._lock:
            self._selections.append(selection)
            self._install()
            for kernel_cache in _jit_caches(selection):
                for key, kernel in list(kernel_cache.items()):
                    if _handle(kernel) not in self._instrumented:
                        self._saved.append(_Saved(kernel_cache, key, kernel))
                        del kernel_cache[key]

    def disable(self, pattern: str | None = None) -> None:
        """Stop probing kernels selected by ``pattern`` (all when None) and restore the
        original compiled kernels."""
        with self._lock:
            gone = [s for s in self._selections if pattern is None or s.pattern == pattern]
            self._selections = [s for s in self._selections if s not in gone]
            for handle, state in list(self._bound.items()):
                if state.selection in gone:
                    state.retired = state.buffers.retire(0)  # legacy stream: after all work
                    self._closing.append(self._bound.pop(handle))
            for sel in gone:
                for saved in [s for s in self._saved if sel.matches(_name(s.kernel))]:
                    saved.kernel_cache[saved.key] = saved.kernel
                    self._saved.remove(saved)
                for kernel_cache in _jit_caches(sel):
                    for key, kernel in list(kernel_cache.items()):
                        if _handle(kernel) in self._instrumented:
                            del kernel_cache[key]  # compiled while probed: recompile clean
            if self._selections:
                self._point_cache()
            else:
                self._uninstall()

    def poll(self) -> list[Collected]:
        """Records of probed launches whose copies have finished; never blocks."""
        with self._lock:
            for state in [*self._bound.values(), *self._closing]:
                self._collect(state)
            for state in self._closing[:]:
                if state.pending is None and state.retired is not None and state.retired.passed():
                    state.retired.close()
                    state.buffers.close()
                    self._closing.remove(state)
            out = list(self.results)
            self.results.clear()
            return out

    def close(self) -> None:
        """Disable everything (buffers still copying are freed by a last :meth:`poll`)."""
        self.disable()

    # --- hooks -----------------------------------------------------------------------

    def _install(self) -> None:
        import triton

        rt = triton.knobs.runtime
        if not self._installed:
            self._previous_stages = rt.add_stages_inspection_hook
            rt.add_stages_inspection_hook = self._stages
            rt.kernel_load_end_hook.add(self._loaded)
            rt.launch_enter_hook.add(self._enter)
            rt.launch_exit_hook.add(self._exit)
            self._user_cache_dir = triton.knobs.cache.dir
            self._installed = True
        self._point_cache()

    def _uninstall(self) -> None:
        import triton

        if not self._installed:
            return
        rt = triton.knobs.runtime
        rt.add_stages_inspection_hook = self._previous_stages
        rt.kernel_load_end_hook.remove(self._loaded)
        rt.launch_enter_hook.remove(self._enter)
        rt.launch_exit_hook.remove(self._exit)
        triton.knobs.cache.dir = self._user_cache_dir
        self._installed = False

    def _digest(self) -> str:
        text = "|".join(repr(s) for s in self._selections)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _point_cache(self) -> None:
        import triton

        path = self._cache_root / self._digest()
        path.mkdir(parents=True, exist_ok=True)
        triton.knobs.cache.dir = str(path)

    def _stages(self, *args: Any) -> Any:
        """The stages hook; with no arguments, the ``(key, digest)`` cache-key protocol."""
        if not args:
            return ("gtop-probes", self._digest())
        if self._previous_stages is not None:
            self._previous_stages(*args)
        stages = args[1]
        original = stages.get("ptx")
        if original is None:
            return None

        def ptx_stage(src: Any, metadata: dict) -> str:
            return self._instrument(original(src, metadata), str(metadata.get("name", "")))

        stages["ptx"] = ptx_stage
        return None

    def _selection(self, name: str) -> Selection | None:
        with self._lock:
            return next((s for s in self._selections if s.matches(name)), None)

    def _instrument(self, text: str, name: str) -> str:
        sel = self._selection(name)
        if sel is None:
            return text
        try:
            return instrument(
                ptx.parse(text),
                get(sel.probe),
                kernel=f"^{re.escape(name)}$",
                level=Level(sel.level) if sel.level else None,
                sample=sel.sample,
            ).text
        except Exception as e:  # fail open: the original kernel is compiled
            self.errors.append(f"{name}: not instrumented: {e}")
            return text

    def _loaded(self, module: Any, function: Any, name: str, metadata_group: dict, hash: str):
        sel = self._selection(name)
        if sel is None:
            return
        try:
            path = next((p for f, p in metadata_group.items() if str(f).endswith(".ptx")), None)
            header = read_header(Path(path).read_text()) if path else None
            if header is None:
                self.errors.append(f"{name}: loaded without a probe")
                return
            from gtop.instrument.runtime import ProbeBuffers

            capacity = sel.capacity or DEFAULT_CAPACITY[sel.probe]
            buffers = ProbeBuffers(int(module), header, capacity)
            buffers.arm(0, False)
        except Exception as e:
            self.errors.append(f"{name}: cannot bind probe buffers: {e}")
            return
        with self._lock:
            self._bound[int(function)] = _Bound(name, sel, header, buffers)
            self._instrumented.add(int(function))

    def _enter(self, metadata: Any) -> None:
        try:
            state = self._bound.get(int(metadata["function"]))
            if state is None:
                return
            with self._lock:
                self._collect(state)
                state.launches += 1
                due = (state.launches - 1) % state.selection.every == 0
                armed = due and state.pending is None
                if armed:  # disarmed otherwise: since loading, and after each probed launch
                    # fixed (block, warp) slots must not keep a previous launch's records
                    clear = not state.buffers.ring
                    state.buffers.reset(int(metadata["stream"]), clear=clear)
                state.armed = armed
        except Exception as e:
            self.errors.append(f"launch: {e}")

    def _exit(self, metadata: Any) -> None:
        try:
            state = self._bound.get(int(metadata["function"]))
            if state is None or not state.armed:
                return
            with self._lock:
                state.pending = state.buffers.copy_async(int(metadata["stream"]))
                state.pending_launch = state.launches
                state.buffers.arm(int(metadata["stream"]), False)
                state.armed = False
        except Exception as e:
            self.errors.append(f"launch: {e}")

    def _collect(self, state: _Bound) -> None:
        if state.pending is None or not state.pending.ready():
            return
        records, overflow = state.pending.result()
        state.pending = None
        self.results.append(
            Collected(
                state.name,
                state.selection.probe,
                state.pending_launch,
                state.header,
                records.copy(),
                overflow,
            )
        )


def _handle(kernel: Any) -> int | None:
    function = getattr(kernel, "function", None)
    return None if function is None else int(function)


def _name(kernel: Any) -> str:
    return str(getattr(kernel, "name", ""))


def _jit_caches(selection: Selection) -> list[dict]:
    """The in-memory kernel caches (one per device) of every live ``@triton.jit``
    function whose kernel name matches ``selection``."""
    from triton.runtime.jit import JITFunction

    return [
        caches[0]
        for obj in gc.get_objects()
        if isinstance(obj, JITFunction) and selection.matches(obj.fn.__name__)
        for caches in list(obj.device_caches.values())
    ]
