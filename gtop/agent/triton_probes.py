"""Probe Triton kernels inside the running process, through Triton 3.6's own hooks.

- ``knobs.runtime.add_stages_inspection_hook`` wraps the ``ptx`` stage: a kernel whose
  name matches an enabled selection gets the probe inserted before ptxas.
- ``knobs.runtime.kernel_load_end_hook`` receives the loaded ``CUmodule``: when its PTX
  carries a ``// gtop-probe`` header, a record buffer is bound through its globals.
- ``launch_enter_hook`` arms the probe on 1 launch in N only (the instrumented kernel
  runs disarmed in between: capacity 0, nothing written) and ``launch_exit_hook`` queues
  the copy-back into pinned memory on a side stream after an event, so the application's
  stream is never synchronised. The hooks run on the target's launching thread: they
  never wait (no lock the agent's thread holds, no event query, no decoding) and time
  themselves. :meth:`TritonProbes.poll`, on the agent's thread, takes finished copies
  (trimmed, undecoded: gtop decodes them, :mod:`gtop.probes.engine.copyback`) and sets
  each kernel's N from the measured costs (:mod:`gtop.agent.probe_budget`): by default
  N keeps the probe within 5% of the target's time; ``every`` asks for a fixed N.

Triton's compile-cache key does not include the hook in Triton 3.6.0 as published (this
module still answers the ``(key, digest)`` protocol for builds that ask for one), so
while a probe is enabled Triton's cache points at a private directory per probe setting:
instrumented binaries never reach the user's cache. Enabling evicts the matching
``@triton.jit`` kernels from their in-memory caches so their next launch recompiles with
the probe; disabling puts the original compiled kernels back.

torch.compile (Inductor) launches its kernels itself: they are probed when compiled
while a selection is enabled, in this process (``compile_threads=1``) and through Triton's
loader (``use_static_cuda_launcher=False``); toggling means recompiling
(``torch._dynamo.reset()``). Inductor keeps loaded kernel modules in memory, keyed by
their source (``PyCodeCache``), so enabling and disabling clear those in-memory caches:
otherwise a recompiled graph gets the kernels it had before the toggle. Everything fails
open: a problem is appended to :attr:`TritonProbes.errors` and the original kernel runs.

Triton 3.6 hands the launch hooks a ``LazyDict`` (``.data`` holds ``name``, ``function``
and ``stream``; it has no ``__getitem__``). Every stage of the live path is counted per
kernel in :attr:`TritonProbes.trace` (see :meth:`TritonProbes.diagnose`), so a run that
collects nothing says which stage did not happen.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import shutil
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..probes import catalog
from ..probes.catalog import get
from ..probes.engine import copyback, ptx
from ..probes.engine.probe import Level
from ..probes.engine.rewrite import instrument, read_header
from . import probe_budget, tmpdirs

if TYPE_CHECKING:
    import numpy as np

    from ..probes.engine.driver import Fence, Pending, ProbeBuffers

TMP_PREFIX = "gtop-triton-"
"""Compile caches of probed kernels: ``/tmp/gtop-triton-<pid>-*``, removed on close (and
when stale, by the next one)."""

# The stages of the live path, in order, as counted in TritonProbes.trace[kernel].
STAGES = (
    "ptx_stage",  # Triton ran our wrapped ptx stage for a selected kernel
    "instrumented",  # the probe was inserted (else "not_instrumented", see errors)
    "load_hook",  # kernel_load_end_hook fired for a selected kernel
    "header_found",  # the loaded module's PTX carries the probe header
    "bound",  # buffers allocated and bound through the module's globals
    "launch",  # launch_enter_hook saw a bound CUfunction
    "armed",  # the launch was due: counters reset, capacity set
    "copy_queued",  # launch_exit_hook queued the copy-back on the side stream
    "copy_done",  # the copy finished and was taken for shipping
)


@dataclass(frozen=True)
class Selection:
    """Which kernels to probe, with what."""

    pattern: str  # regex on the kernel name
    probe: str
    every: int = 0  # probe 1 launch in ``every``; 0: N kept within probe_budget.BUDGET
    sample: int = 1  # mem_trace: 1 in N accesses
    level: str | None = None
    capacity: int = 0  # records per launch; 0: the probe's own (its catalog entry's)

    def matches(self, name: str) -> bool:
        return re.search(self.pattern, name) is not None

    def records(self) -> int:
        """Records per probed launch: :attr:`capacity`, else the probe's own (its catalog
        entry's)."""
        return self.capacity or catalog.entry(self.probe).capacity


@dataclass(frozen=True)
class Collected:
    """The copy of one probed launch, as shipped (decoded only in gtop's process)."""

    kernel: str
    probe: str
    launch: int  # 1-based launch count of this kernel since it was bound
    header: dict  # the instrumented module's header (kernel ids, tensor-op classes, ...)
    layout: copyback.Layout
    data: bytes  # the trimmed host copy (copyback.trim)
    every: int = 1  # 1 launch in ``every`` was probed when this one was
    auto: bool = True  # ``every`` chosen to keep the cost within probe_budget.BUDGET
    cost: float = -1.0  # share of the target's time in the probe's hooks (-1: not measured yet)

    def decoded(self) -> tuple[np.ndarray, int]:
        """(records, dropped): for gtop's process and tests; never called in the target."""
        return copyback.decode(self.layout, self.data, get(self.probe))


@dataclass
class _Bound:
    name: str
    selection: Selection
    header: dict
    buffers: ProbeBuffers
    launches: int = 0
    every: int = probe_budget.FIRST_EVERY
    countdown: int = 1  # launches until the next due one: the first launch is probed
    armed_by: int | None = None  # the launching thread whose launch is armed
    pending: Pending | None = None  # set by the launching thread, cleared by the agent's
    pending_launch: int = 0
    retired: Fence | None = None  # set when disabled: free the buffers once it passed
    decide: threading.Lock = field(default_factory=threading.Lock)
    # costs: ns and launches of the hooks (enter and exit) of unprobed launches, of
    # probed ones, and ns and copies of the agent's copy-out
    plain_ns: int = 0
    plain: int = 0
    probed_ns: int = 0
    probed: int = 0
    take_ns: int = 0
    taken: int = 0
    tuned_at: int = 0  # monotonic ns of the last tuning, launches and ns spent then
    tuned_launches: int = 0
    tuned_spent: int = 0
    cost: float = -1.0  # share of the target's time on this kernel's probe lately (-1: not yet)

    def __post_init__(self) -> None:
        if self.selection.every:
            self.every = self.selection.every
        self.tuned_at = time.monotonic_ns()

    @property
    def spent_ns(self) -> int:
        return self.plain_ns + self.probed_ns + self.take_ns

    def tune(self, now_ns: int) -> None:
        """Measure the last interval's launch rate and cost; with automatic sampling,
        set ``every`` to keep the probe within :data:`probe_budget.BUDGET`."""
        dt = now_ns - self.tuned_at
        if dt < probe_budget.RETUNE_NS:
            return
        rate = (self.launches - self.tuned_launches) * 1e9 / dt
        self.cost = (self.spent_ns - self.tuned_spent) / dt
        self.tuned_at, self.tuned_launches, self.tuned_spent = now_ns, self.launches, self.spent_ns
        if self.selection.every or not self.probed:
            return
        plain = self.plain_ns / self.plain if self.plain else 0.0
        extra = (self.probed_ns / self.probed) + (self.take_ns / max(1, self.taken)) - plain
        self.every = probe_budget.every_for(rate, plain, extra)
        self.countdown = min(self.countdown, self.every)


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
        # kernel name -> stage (see STAGES) -> count; "unbound_launch" counts launches of
        # selected kernels whose CUfunction was never bound (loaded before enabling?)
        self.trace: dict[str, Counter[str]] = {}
        self._selections: list[Selection] = []
        self._bound: dict[int, _Bound] = {}  # CUfunction handle -> state
        self._closing: list[_Bound] = []
        # CUfunction handles of loaded probed kernels (their CompiledKernel.hash equals the
        # original's: Triton's cache key does not see the probe).
        self._instrumented: set[int] = set()
        self._headers: dict[str, dict] = {}  # kernel name -> header of its last rewrite
        self._saved: list[_Saved] = []
        self._lock = threading.RLock()
        self._cache_root = tmpdirs.make(TMP_PREFIX)
        self._user_cache: tuple[bool, Any, str | None] | None = None
        self._previous_stages: Any = None
        self._installed = False
        self._watched: dict[str, bool] = {}
        """Kernel name -> selected, for launches of unbound kernels (no regex, no lock
        on the launch path); replaced whenever the selections change."""
        self.hook_ns = 0
        """ns the launch hooks ran on the target's launching threads (every kernel)."""
        self.hook_calls = 0

    # --- control ---------------------------------------------------------------------

    def enable(self, selection: Selection) -> None:
        """Probe the next launches of kernels matching ``selection``."""
        get(selection.probe)  # unknown probe: KeyError now, not at compile time
        with self._lock:
            self._selections.append(selection)
            self._watched = {}
            self._install()
            try:
                for kernel_cache in _jit_caches(selection):
                    for key, kernel in list(kernel_cache.items()):
                        if _handle(kernel) not in self._instrumented:
                            self._saved.append(_Saved(kernel_cache, key, kernel))
                            del kernel_cache[key]
            except Exception as e:  # already-compiled kernels stay unprobed
                self._note(f"cannot evict compiled kernels: {type(e).__name__}: {e}")
            self._note(_clear_inductor_caches())

    def disable(self, pattern: str | None = None) -> None:
        """Stop probing kernels selected by ``pattern`` (all when None) and restore the
        original compiled kernels. Never raises: problems go to :attr:`errors`."""
        with self._lock:
            gone = [s for s in self._selections if pattern is None or s.pattern == pattern]
            self._selections = [s for s in self._selections if s not in gone]
            self._watched = {}
            for handle, state in list(self._bound.items()):
                if state.selection in gone:
                    try:
                        state.retired = state.buffers.retire(0)  # legacy stream: after all
                    except Exception as e:
                        self._note(f"{state.name}: cannot retire probe buffers: {e!r}")
                    self._closing.append(self._bound.pop(handle))
            try:
                for sel in gone:
                    for saved in [s for s in self._saved if sel.matches(_name(s.kernel))]:
                        saved.kernel_cache[saved.key] = saved.kernel
                        self._saved.remove(saved)
                    for kernel_cache in _jit_caches(sel):
                        for key, kernel in list(kernel_cache.items()):
                            if _handle(kernel) in self._instrumented:
                                del kernel_cache[key]  # compiled while probed: recompile
            except Exception as e:
                self._note(f"cannot restore the original kernels: {e!r}")
            if gone:
                self._note(_clear_inductor_caches())
            try:
                if self._selections:
                    self._point_cache()
                else:
                    self._uninstall()
            except Exception as e:
                self._note(f"cannot restore Triton's hooks or cache dir: {e!r}")

    def poll(self) -> list[Collected]:
        """Copies of probed launches that have finished; never blocks. Runs on the
        agent's thread, which also sets each kernel's sampling here."""
        now = time.monotonic_ns()
        with self._lock:
            for state in [*self._bound.values(), *self._closing]:
                self._collect(state)
            for state in self._bound.values():
                state.tune(now)
            for state in self._closing[:]:
                if state.pending is not None:
                    continue
                try:
                    if state.retired is None:  # never disarmed: leak rather than free
                        self._closing.remove(state)  # memory a launch may still write
                        continue
                    if not state.retired.passed():
                        continue
                    state.retired.close()
                    state.buffers.close()
                except Exception as e:
                    self._note(f"{state.name}: cannot free probe buffers: {e!r}")
                self._closing.remove(state)
            out = list(self.results)
            self.results.clear()
            return out

    def close(self) -> None:
        """Disable everything (buffers still copying are freed by a last :meth:`poll`)
        and remove the compile cache."""
        self.disable()
        shutil.rmtree(self._cache_root, ignore_errors=True)

    def diagnose(self) -> str:
        """Everything needed to tell why a probed kernel gave no records: the hooks'
        state, the per-kernel stage counts (:data:`STAGES`) and the errors, untruncated."""
        lines = [f"selections: {self._selections!r}", f"hooks: {self._hook_state()}"]
        try:
            import triton

            lines.append(f"triton {triton.__version__}; cache dir {triton.knobs.cache.dir}")
        except Exception as e:
            lines.append(f"triton: {e!r}")
        with self._lock:
            lines.append(f"bound functions: {len(self._bound)}, closing: {len(self._closing)}")
            for state in self._bound.values():
                lines.append(
                    f"  {state.name}: launches {state.launches} every {state.every} "
                    f"armed {state.armed_by is not None} pending {state.pending is not None} "
                    f"(launch {state.pending_launch}) cost {100 * state.cost:.2f}%"
                )
            if not self.trace:
                lines.append("trace: no stage happened for any selected kernel")
            for name, counts in sorted(self.trace.items()):
                stages = [f"{k}={counts.get(k, 0)}" for k in STAGES]
                extra = [f"{k}={v}" for k, v in sorted(counts.items()) if k not in STAGES]
                missing = next((k for k in STAGES[:-1] if not counts.get(k)), None)
                lines.append(
                    f"trace {name}: {' '.join(stages + extra)}"
                    + (f"  <- first missing stage: {missing}" if missing else "")
                )
            lines.append(f"errors ({len(self.errors)}):")
            lines += [f"  {e}" for e in self.errors]
        return "\n".join(lines)

    def _count(self, name: str, stage: str, n: int = 1) -> None:
        counts = self.trace.get(name)
        if counts is None:
            counts = self.trace[name] = Counter()
        counts[stage] += n

    def _note(self, problem: str | None) -> None:
        if problem:
            self.errors.append(problem)

    # --- hooks -----------------------------------------------------------------------

    def _hook_state(self) -> str:
        try:
            import triton

            rt = triton.knobs.runtime
            return (
                f"installed={self._installed} "
                f"stages={rt.add_stages_inspection_hook == self._stages} "
                f"load_end={self._loaded in getattr(rt.kernel_load_end_hook, 'calls', ())} "
                f"enter={self._enter in getattr(rt.launch_enter_hook, 'calls', ())} "
                f"exit={self._exit in getattr(rt.launch_exit_hook, 'calls', ())}"
            )
        except Exception as e:
            return repr(e)

    def _install(self) -> None:
        import triton

        rt = triton.knobs.runtime
        if not self._installed:
            self._previous_stages = rt.add_stages_inspection_hook
            rt.add_stages_inspection_hook = self._stages
            rt.kernel_load_end_hook.add(self._loaded)
            rt.launch_enter_hook.add(self._enter)
            rt.launch_exit_hook.add(self._exit)
            cache = triton.knobs.cache
            # setting knobs.cache.dir also sets TRITON_CACHE_DIR: remember both
            self._user_cache = (
                "dir" in vars(cache),
                vars(cache).get("dir"),
                os.environ.get("TRITON_CACHE_DIR"),
            )
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
        if self._user_cache is not None:
            had, value, env = self._user_cache
            if had:
                triton.knobs.cache.dir = value
            else:
                del triton.knobs.cache.dir
            if env is None:
                os.environ.pop("TRITON_CACHE_DIR", None)
            else:
                os.environ["TRITON_CACHE_DIR"] = env
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
        self._count(name, "ptx_stage")
        try:
            done = instrument(
                ptx.parse(text),
                get(sel.probe),
                kernel=f"^{re.escape(name)}$",
                level=Level(sel.level) if sel.level else None,
                sample=sel.sample,
            )
        except Exception as e:  # fail open: the original kernel is compiled
            self._count(name, "not_instrumented")
            self.errors.append(f"{name}: not instrumented: {type(e).__name__}: {e}")
            return text
        self._count(name, "instrumented")
        self._headers[name] = read_header(done.text) or {}
        return done.text

    def _loaded(self, module: Any, function: Any, name: str, metadata_group: dict, hash: str):
        sel = self._selection(name)
        if sel is None:
            return
        self._count(name, "load_hook")
        try:
            path = next((p for f, p in metadata_group.items() if str(f).endswith(".ptx")), None)
            # no .ptx kept (TRITON_STORE_BINARY_ONLY): the header of this process's rewrite
            header = read_header(Path(path).read_text()) if path else self._headers.get(name)
            if not header:
                where = path or f"no .ptx in {sorted(metadata_group)}"
                self.errors.append(f"{name}: loaded without a probe header ({where})")
                return
            self._count(name, "header_found")
            from ..probes.engine.driver import ProbeBuffers

            buffers = ProbeBuffers(int(module), get(sel.probe), header, sel.records())
            buffers.arm(0, False)
        except Exception as e:
            self.errors.append(f"{name}: cannot bind probe buffers: {type(e).__name__}: {e}")
            return
        with self._lock:
            self._bound[int(function)] = _Bound(name, sel, header, buffers)
            self._instrumented.add(int(function))
        self._count(name, "bound")

    def _enter(self, metadata: Any) -> None:
        """Arm the probe when this launch is due; on the target's launching thread, so
        it never waits: a launch whose decision another thread is making, or that is
        due while the last copy is still on its way, just runs unprobed."""
        t0 = time.perf_counter_ns()
        state = None
        armed = False
        try:
            data = _launch_data(metadata)
            state = self._bound.get(int(data["function"]))
            if state is None:
                self._unbound(str(data.get("name", "")))
                return
            self._count(state.name, "launch")
            if not state.decide.acquire(blocking=False):
                self._count(state.name, "skipped_busy")
                return
            try:
                state.launches += 1
                state.countdown -= 1
                if state.countdown > 0 or state.armed_by is not None:
                    return
                if state.pending is not None:  # due again: the next launch tries
                    self._count(state.name, "skipped_copy_pending")
                    return
                # fixed (block, warp) slots must not keep a previous launch's records
                state.buffers.reset(int(data["stream"]), clear=not state.buffers.ring)
                state.armed_by = threading.get_ident()
                state.countdown = state.every
                armed = True
                self._count(state.name, "armed")
            finally:
                state.decide.release()
        except Exception as e:
            self.errors.append(f"launch enter: {type(e).__name__}: {e}")
        finally:
            self._spent(state, armed, time.perf_counter_ns() - t0, launches=1)

    def _exit(self, metadata: Any) -> None:
        """Queue the armed launch's copy-back and disarm (launching thread, no waits)."""
        t0 = time.perf_counter_ns()
        state = None
        armed = False
        try:
            data = _launch_data(metadata)
            state = self._bound.get(int(data["function"]))
            if state is None or state.armed_by != threading.get_ident():
                return
            armed = True
            try:
                state.pending_launch = state.launches
                state.pending = state.buffers.copy_async(int(data["stream"]))
                self._count(state.name, "copy_queued")
            finally:
                state.buffers.arm(int(data["stream"]), False)
                state.armed_by = None
        except Exception as e:
            self.errors.append(f"launch exit: {type(e).__name__}: {e}")
        finally:
            self._spent(state, armed, time.perf_counter_ns() - t0, launches=0)

    def _spent(self, state: _Bound | None, probed: bool, ns: int, launches: int) -> None:
        """Add one hook's time; a launch is counted at its enter hook."""
        self.hook_ns += ns
        self.hook_calls += 1
        if state is None:
            return
        if probed:
            state.probed_ns += ns
            state.probed += launches
        else:
            state.plain_ns += ns
            state.plain += launches

    def _unbound(self, name: str) -> None:
        """Count a selected kernel launched from a module bound to no buffers (loaded
        before enabling?)."""
        watched = self._watched
        selected = watched.get(name)
        if selected is None:
            selected = watched[name] = any(s.matches(name) for s in list(self._selections))
        if selected:
            self._count(name, "unbound_launch")

    def _collect(self, state: _Bound) -> None:
        """Take a finished copy (agent's thread): trimmed bytes, not decoded."""
        pending = state.pending
        try:
            if pending is None or not pending.ready():
                return
            t0 = time.perf_counter_ns()
            data = pending.take()
            state.take_ns += time.perf_counter_ns() - t0
            state.taken += 1
        except Exception as e:
            self.errors.append(f"{state.name}: copy-back failed: {type(e).__name__}: {e}")
            state.pending = None
            return
        launch = state.pending_launch
        state.pending = None  # the launching thread may arm (and reuse the copy) again
        self._count(state.name, "copy_done")
        self.results.append(
            Collected(
                state.name,
                state.selection.probe,
                launch,
                state.header,
                state.buffers.layout,
                data,
                every=state.every,
                auto=not state.selection.every,
                cost=state.cost,
            )
        )


def _launch_data(metadata: Any) -> Any:
    """The mapping behind a launch hook's argument: Triton 3.6 passes a ``LazyDict``
    whose ``data`` holds ``name``/``function``/``stream`` (reading ``data`` does not run
    the kernel's ``launch_metadata`` function); older Tritons pass a dict."""
    data = getattr(metadata, "data", None)
    return data if isinstance(data, dict) else metadata


def _clear_inductor_caches() -> str | None:
    """Forget Inductor's in-memory kernel modules (keyed by source), so the next
    ``torch.compile`` loads, and so compiles, its Triton kernels again. Only when
    torch's Inductor is already imported; returns a problem or None."""
    if "torch._inductor.codecache" not in sys.modules:
        return None
    try:
        from torch._inductor.codecache import PyCodeCache

        PyCodeCache.cache_clear()
        compiled = sys.modules.get("torch._inductor.async_compile")
        cache = getattr(compiled, "CompiledTritonKernels", None)
        if cache is not None:
            cache.cache_clear()
    except Exception as e:  # a torch without these caches: nothing to clear
        return f"cannot clear Inductor's kernel caches: {type(e).__name__}: {e}"
    return None


def _handle(kernel: Any) -> int | None:
    function = getattr(kernel, "function", None)
    return None if function is None else int(function)


def _name(kernel: Any) -> str:
    return str(getattr(kernel, "name", ""))


def _jit_caches(selection: Selection) -> list[dict]:
    """The in-memory kernel caches (one per device) of every live ``@triton.jit``
    function whose kernel name matches ``selection``."""
    from triton.runtime.jit import JITFunction

    out = []
    for obj in gc.get_objects():
        # type(), not isinstance(): some objects' __class__ is a property that warns/raises
        if not issubclass(type(obj), JITFunction):
            continue
        try:
            if selection.matches(obj.fn.__name__):
                out += [caches[0] for caches in list(obj.device_caches.values())]
        except Exception:  # a half-built JITFunction: nothing cached
            continue
    return out
