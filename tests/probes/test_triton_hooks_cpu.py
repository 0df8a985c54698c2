"""The live Triton path without a GPU: Triton 3.6's own hook objects (``HookChain``,
``LazyDict``) driving :class:`TritonProbes`, with the device buffers faked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import triton
from triton.compiler.compiler import LazyDict

from gtop.agent import triton_probes
from gtop.agent.triton_probes import Selection, TritonProbes, _launch_data
from gtop.probes.engine import copyback

from .copies import ring_copy
from .records import simulated_launch

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ptx"


_LAYOUT, _COPY = ring_copy(simulated_launch(blocks=3), "block_sched", stripes=2)


@dataclass
class _FakePending:
    launch: int
    done: bool = True

    def ready(self) -> bool:
        return self.done

    def take(self) -> bytes:
        return copyback.trim(_LAYOUT, memoryview(_COPY))


class _FakeBuffers:
    ring = False
    layout = _LAYOUT

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.n = 0

    def reset(self, stream: int, clear: bool) -> None:
        self.calls.append(f"reset {stream}")

    def arm(self, stream: int, armed: bool) -> None:
        self.calls.append(f"arm {armed}")

    def copy_async(self, stream: int) -> _FakePending:
        self.n += 1
        return _FakePending(self.n)

    def retire(self, stream: int):
        return None

    def close(self) -> None:
        self.calls.append("close")


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "user"))
    probes = TritonProbes()
    yield probes
    probes.close()


def _meta(function: int, name: str = "add_int_kernel", stream: int = 7) -> LazyDict:
    """What Triton 3.6's launcher hands launch hooks (CompiledKernel.launch_metadata)."""
    return LazyDict({"name": name, "function": function, "stream": stream})


def test_launch_data_reads_lazydict_without_evaluating() -> None:
    ran = []
    meta = _meta(5)
    meta.add(lambda: ran.append(1) or {"flops": 1}, ())
    assert _launch_data(meta)["function"] == 5 and not ran
    assert _launch_data({"function": 6})["function"] == 6


def test_hooks_through_triton_hook_chains(manager: TritonProbes) -> None:
    """every=3 over 7 launches, driven through knobs.runtime's own HookChains; the
    agent's poll takes each copy undecoded, and the hooks time themselves."""
    manager.enable(Selection("^add_int_kernel$", "block_sched", every=3))
    rt = triton.knobs.runtime
    assert rt.add_stages_inspection_hook == manager._stages
    fake = _FakeBuffers()
    state = triton_probes._Bound("add_int_kernel", manager._selections[0], {}, fake)
    manager._bound[1234] = state
    got = []
    for _ in range(7):
        rt.launch_enter_hook(_meta(1234))
        rt.launch_exit_hook(_meta(1234))
        rt.launch_enter_hook(_meta(99, name="other_kernel"))  # not ours: ignored
        got += manager.poll()
    assert [c.launch for c in got] == [1, 4, 7], manager.diagnose()
    assert all(c.every == 3 and not c.auto and c.data == got[0].data for c in got)
    records, dropped = got[0].decoded()
    assert len(records) == 3 * 4 and dropped == 0
    assert fake.calls.count("reset 7") == 3 and not manager.errors, manager.diagnose()
    assert manager.trace["add_int_kernel"]["launch"] == 7
    assert manager.trace["add_int_kernel"]["copy_done"] == 3
    assert manager.hook_calls == 7 * 3 and manager.hook_ns > 0
    assert state.probed == 3 and state.plain == 4
    assert "other_kernel" not in manager.trace
    manager.disable()
    assert manager._enter not in rt.launch_enter_hook.calls
    assert rt.add_stages_inspection_hook is None


def test_launch_hooks_never_wait_for_the_agent_thread(manager: TritonProbes) -> None:
    """While the agent's thread holds the manager (a poll, a toggle), launches go on:
    the due one is armed, and a due launch whose last copy is still on its way runs
    unprobed instead of waiting for it."""
    import threading

    manager.enable(Selection("^add_int_kernel$", "block_sched", every=1))
    fake = _FakeBuffers()
    manager._bound[1234] = state = triton_probes._Bound(
        "add_int_kernel", manager._selections[0], {}, fake
    )
    held, release = threading.Event(), threading.Event()

    def agent() -> None:
        with manager._lock:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=agent)
    thread.start()
    held.wait(10)
    try:
        rt = triton.knobs.runtime
        rt.launch_enter_hook(_meta(1234))
        rt.launch_exit_hook(_meta(1234))
        state.pending.done = False  # the copy has not arrived yet
        rt.launch_enter_hook(_meta(1234))
        rt.launch_exit_hook(_meta(1234))
    finally:
        release.set()
        thread.join()
    counts = manager.trace["add_int_kernel"]
    assert counts["armed"] == 1 and counts["skipped_copy_pending"] == 1, manager.diagnose()
    assert manager.poll() == []  # still on its way
    state.pending.done = True
    assert [c.launch for c in manager.poll()] == [1]


def test_automatic_sampling_keeps_the_probe_within_budget() -> None:
    """2,000 launches/s, 2 us of hooks per launch, 200 us more per probed one: 1 in 9
    keeps the probe under 5% of the target's time (1 in 8 would not); at most 10
    probed launches a second make it 1 in 200."""
    from gtop.agent import probe_budget

    state = triton_probes._Bound("k", Selection("^k$", "block_sched"), {}, _FakeBuffers())
    assert state.every == probe_budget.FIRST_EVERY and state.countdown == 1
    t0 = state.tuned_at
    state.launches, state.plain, state.plain_ns = 1000, 990, 990 * 2_000
    state.probed, state.probed_ns, state.taken, state.take_ns = 10, 10 * 102_000, 5, 5 * 100_000
    state.countdown = 50
    state.tune(t0 + 500_000_000)
    assert state.every == 200 and state.countdown == 50
    assert probe_budget.every_for(2000, 2_000, 200_000, most_per_s=0) == 9
    share = 2000 * (2e-6 + 200e-6 / 9)
    assert share <= probe_budget.BUDGET < 2000 * (2e-6 + 200e-6 / 8)
    assert state.cost == pytest.approx((990 * 2_000 + 10 * 102_000 + 5 * 100_000) / 5e8)
    assert probe_budget.every_for(2000, 30_000, 1_000) == probe_budget.MAX_EVERY
    assert probe_budget.every_for(10, 2_000, 200_000) == 1
    assert probe_budget.every_for(10, 2_000, 200_000, budget=0.001) == 3  # 2 ms/s > 1 ms/s
    fixed = triton_probes._Bound("k", Selection("^k$", "block_sched", every=1), {}, _FakeBuffers())
    fixed.launches, fixed.probed, fixed.probed_ns = 1000, 1000, 10**9
    fixed.tune(fixed.tuned_at + 500_000_000)
    assert fixed.every == 1  # every launch was asked for


def test_stages_hook_instruments_selected_ptx(manager: TritonProbes) -> None:
    manager.enable(Selection("^add_int_kernel$", "block_sched"))
    text = (CORPUS / "triton_add_int.ptx").read_text()
    stages = {"ptx": lambda src, metadata: text}
    triton.knobs.runtime.add_stages_inspection_hook(None, stages, None, None, 90)
    out = stages["ptx"](None, {"name": "add_int_kernel"})
    assert "// gtop-probe" in out
    assert stages["ptx"](None, {"name": "something_else"}) == text
    counts = manager.trace["add_int_kernel"]
    assert counts["ptx_stage"] == 1 and counts["instrumented"] == 1
    assert "first missing stage: load_hook" in manager.diagnose()


def test_unbound_launch_is_counted(manager: TritonProbes) -> None:
    """A selected kernel launched from a module loaded before enabling shows up."""
    manager.enable(Selection("^add_int_kernel$", "block_sched"))
    triton.knobs.runtime.launch_enter_hook(_meta(42))
    assert manager.trace["add_int_kernel"]["unbound_launch"] == 1
    assert "first missing stage: ptx_stage" in manager.diagnose()


def test_disable_restores_user_cache_dir(tmp_path: Path, monkeypatch) -> None:
    import os

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.delattr(triton.knobs.cache, "dir", raising=False)
    default = triton.knobs.cache.dir
    probes = TritonProbes()
    probes.enable(Selection("^k$", "block_sched"))
    assert triton.knobs.cache.dir != default
    probes.disable()
    assert triton.knobs.cache.dir == default
    assert "TRITON_CACHE_DIR" not in os.environ


@pytest.mark.parametrize("kernel", ["add_int", "matmul_wgmma"])
def test_triton_compile_runs_the_wrapped_ptx_stage(manager: TritonProbes, kernel: str) -> None:
    """Real Triton 3.6 compilation for sm_90 (no GPU needed): the stages hook sees the
    kernel's name, the probe goes in, and Triton's own ptxas assembles the result."""
    import sys

    sys.path.insert(0, str(CORPUS.parent.parent.parent / "benchmarks"))
    import triton_kernels as tk

    entry = next(e for e in tk.CORPUS if e.name == kernel)
    name = entry.fn.fn.__name__
    manager.enable(Selection(f"^{name}$", "tensorop" if "matmul" in kernel else "block_sched"))
    try:
        probed = tk.compile_kernel(entry)
    except Exception as e:  # no usable ptxas/toolchain for Triton here
        pytest.skip(f"triton.compile unavailable: {e!r}")
    assert "// gtop-probe" in probed.asm["ptx"], manager.diagnose()
    assert probed.asm["cubin"], manager.diagnose()
    counts = manager.trace[name]
    assert counts["ptx_stage"] == 1 and counts["instrumented"] == 1, manager.diagnose()
    manager.disable()
    assert "// gtop-probe" not in tk.compile_kernel(entry).asm["ptx"]


class _Hostile:
    """Like some torch objects after torch.compile: reading ``__class__`` raises."""

    @property
    def __class__(self):
        raise RuntimeError("lazy object exploded")


def test_kernel_cache_scan_survives_objects_that_raise_on_class(manager: TritonProbes) -> None:
    """isinstance() reads ``__class__``; a RuntimeError there failed enable() and, in
    the fixture's close(), the torch.compile test's teardown (FAILED + ERROR on the H200)."""
    hostile = _Hostile()
    with pytest.raises(RuntimeError):
        isinstance(hostile, int)
    manager.enable(Selection("^nothing$", "block_sched"))
    manager.disable()
    assert not manager.errors, manager.diagnose()
    del hostile
