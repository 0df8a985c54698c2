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


def _by_lines(path: str) -> list[tuple[int, str]]:
    """kallsyms' function lines as a plain loop reads them, by address."""
    out = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                out.append((int(parts[0], 16), parts[2]))
    return sorted(out, key=lambda pair: pair[0])


def _parsed(path: str) -> list[tuple[int, str]]:
    syms = symbols.KernelSymbols(path)
    return [(int(a), syms.name(i)) for i, a in enumerate(syms.addrs)]


def test_kallsyms_parse_matches_a_line_by_line_read(tmp_path) -> None:
    """Functions only (``tTwW``), a module's name cut at its tab, sorted by address."""
    path = tmp_path / "kallsyms"
    path.write_text(
        "ffffffff81000000 T _stext\n"
        "ffffffff82000000 D some_data\n"
        "ffffffffc0a01000 t nf_hook\t[nf_tables]\n"
        "ffffffff81000100 W weak_fn\n"
        "ffffffff810000F0 t upper_hex\n"
    )
    assert _parsed(str(path)) == _by_lines(str(path))
    assert [name for _, name in _parsed(str(path))] == ["_stext", "upper_hex", "weak_fn", "nf_hook"]
    syms = symbols.KernelSymbols(str(path))
    assert syms.resolve([0xFFFFFFFF81000104, 0xFFFFFFFFC0A01010, 1]) == (
        "weak_fn",
        "nf_hook",
        symbols.UNKNOWN,
    )


def test_kallsyms_parse_of_this_machine() -> None:
    """Against line-by-line reads just before and after the parse that agree: BPF
    programs that tests running alongside load and unload come and go in the file
    between two reads (a parallel run failed on 9 of them)."""
    for _ in range(50):
        before = _by_lines("/proc/kallsyms")
        parsed = _parsed("/proc/kallsyms")
        if _by_lines("/proc/kallsyms") == before:
            break
    assert parsed == before
