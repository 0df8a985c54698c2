"""Kernel frames: /proc/kallsyms is read on the first kernel frame, once, not at start."""

from __future__ import annotations

import os
import threading

import pytest

from gtop.collectors.threads import symbols


def _kallsyms_address(name: str) -> int | None:
    with open("/proc/kallsyms") as f:
        for line in f:
            addr, kind, sym = line.split()[:3]
            if sym == name and kind in "tT":
                return int(addr, 16) or None  # 0: addresses hidden from this user
    return None


def test_kernel_symbols_are_read_on_the_first_kernel_frame_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    addr = _kallsyms_address("schedule")
    if addr is None:
        pytest.skip("kallsyms shows no addresses to this user")
    reads: list[int] = []

    class Counted(symbols.KernelSymbols):
        def __init__(self) -> None:
            reads.append(1)
            super().__init__()

    monkeypatch.setattr(symbols, "KernelSymbols", Counted)
    syms = symbols.Symbolizer()
    assert syms.frames(os.getpid(), [], []) == ((), ())
    assert reads == []  # nothing read until a kernel frame comes

    results: list[tuple[str, ...]] = []
    start = threading.Barrier(4)

    def resolve() -> None:
        start.wait()
        results.append(syms.frames(os.getpid(), [], [addr + 4])[1])

    threads = [threading.Thread(target=resolve) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [("schedule",)] * 4
    assert reads == [1]
