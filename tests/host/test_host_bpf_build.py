"""The shipped CO-RE object is exactly what build.sh makes from the shipped source, and it
loads in every hook mode (tp_btf, raw_tp, tracepoint) on this kernel."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from gtop.collectors.threads import bpf as threads_bpf
from gtop.collectors.threads.tiers import tier_report
from gtop.core.hub import Hub

BUILD = threads_bpf.OBJECT.parent / "build.sh"


def test_shipped_object_matches_a_rebuild(tmp_path):
    for tool in ("clang", "bpftool", "llvm-strip"):
        if shutil.which(tool) is None and not shutil.which(f"{tool}-14"):
            pytest.fail(f"{tool} missing: CI must install clang, llvm and bpftool")
    out = tmp_path / "offcpu.bpf.o"
    subprocess.run(["sh", str(BUILD), str(out)], check=True)
    assert out.read_bytes() == threads_bpf.OBJECT.read_bytes(), "run build.sh and commit"


@pytest.mark.parametrize("mode", threads_bpf.MODES)
def test_each_hook_mode_loads_and_attaches(mode):
    if mode == "tp" and not os.path.exists("/sys/kernel/tracing/events/sched"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=True)
    col = threads_bpf.BpfThreadCollector(Hub(), os.getpid(), mode=mode, python_stacks=False)
    col.start()
    col.stop()
    assert col.mode == mode


def test_tier_report_says_bpf_works_here():
    report = {t.tier: t for t in tier_report()}
    assert report["bpf"].available, report["bpf"].needs
    assert report["perf"].available, report["perf"].needs
    assert report["proc"].available
