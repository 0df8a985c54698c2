"""The live Triton path without a GPU: Triton 3.6's own hook objects (``HookChain``,
``LazyDict``) driving :class:`TritonProbes`, with the device buffers faked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import triton
from triton.compiler.compiler import LazyDict

from gtop.agent import triton_probes
from gtop.agent.triton_probes import Selection, TritonProbes, _launch_data
from gtop.probes.catalog import block_sched

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "ptx"


@dataclass
class _FakePending:
    launch: int

    def ready(self) -> bool:
        return True

    def result(self) -> tuple[np.ndarray, int]:
        return np.zeros(3, dtype=block_sched.RECORD), 0


class _FakeBuffers:
    ring = False

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
    """every=3 over 7 launches, driven through knobs.runtime's own HookChains."""
    manager.enable(Selection("^add_int_kernel$", "block_sched", every=3))
    rt = triton.knobs.runtime
    assert rt.add_stages_inspection_hook == manager._stages
    fake = _FakeBuffers()
    state = triton_probes._Bound("add_int_kernel", manager._selections[0], {}, fake)
    manager._bound[1234] = state
    for _ in range(7):
        rt.launch_enter_hook(_meta(1234))
        rt.launch_exit_hook(_meta(1234))
        rt.launch_enter_hook(_meta(99, name="other_kernel"))  # not ours: ignored
    got = manager.poll()
    assert [c.launch for c in got] == [1, 4, 7], manager.diagnose()
    assert fake.calls.count("reset 7") == 3 and not manager.errors, manager.diagnose()
    assert manager.trace["add_int_kernel"]["launch"] == 7
    assert manager.trace["add_int_kernel"]["copy_done"] == 3
    assert "other_kernel" not in manager.trace
    manager.disable()
    assert manager._enter not in rt.launch_enter_hook.calls
    assert rt.add_stages_inspection_hook is None


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
