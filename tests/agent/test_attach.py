"""Attach for real on CPU: ptrace injection into running CPython targets, and every
failure case giving one clear line while the target runs on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_helpers import TARGETS, script, start_target
from agent_helpers import Target as TargetProcess

from gtop.collectors.agent import attach as attach_mod
from gtop.collectors.agent import injector as injector_mod
from gtop.collectors.agent.attach import AttachError, Target, attach, check_ptrace
from gtop.collectors.agent.target import inspect

PYENV = Path.home() / ".pyenv" / "versions"


def other_pythons() -> list[str]:
    """CPython 3.10-3.13 interpreters on this machine besides the running one."""
    found = []
    for minor in (10, 12, 13):
        hits = sorted(PYENV.glob(f"3.{minor}.*/bin/python3"))
        if hits:
            found.append(str(hits[-1]))
    return found


@pytest.mark.parametrize("python", [sys.executable, *other_pythons()])
def test_attach_runs_agent_in_target_which_runs_on(processes, link_factory, python):
    target = start_target(processes, script("idle.py", python))
    link, _ = link_factory()
    t0 = time.monotonic()
    status = attach(target.pid, link)
    assert time.monotonic() - t0 < 5
    # a CPU-only process: the agent is in and waits for CUDA, without loading it
    assert status.state == "waiting_cuda"
    assert status.argv == (str(TARGETS / "idle.py"),)
    maps = Path(f"/proc/{target.pid}/maps").read_text()
    assert "libcuda" not in maps and "libcupti" not in maps
    link.stop()
    assert link.status()[target.pid].state == "detached"
    assert target.readline().startswith("tick")
    assert target.proc.poll() is None


def test_attach_again_after_detach(processes, link_factory):
    target = start_target(processes, script("idle.py"))
    for _ in range(3):
        link, _ = link_factory()
        assert attach(target.pid, link).state == "waiting_cuda"
        link.stop()
    assert target.readline().startswith("tick")


def test_gtop_sigkilled_while_attached_target_stops_tracing_and_runs_on(processes, fake_libs):
    target = start_target(processes, script("fake_gpu.py"), fake_libs)
    assert target.ask("init") == "ok"
    host = subprocess.Popen(
        [sys.executable, str(TARGETS / "kill_host.py"), str(target.pid)],
        stdout=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": f"{Path(__file__).parents[2]}:" + os.environ.get("PYTHONPATH", ""),
        },
    )
    processes.append(host)
    assert TargetProcess(host).readline(60).split() == ["attached", "tracing"]
    assert target.ask("mask") != "mask 0"
    host.send_signal(signal.SIGKILL)
    host.wait(10)
    deadline = time.monotonic() + 5
    while target.ask("mask") != "mask 0" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert target.ask("mask") == "mask 0"
    assert target.ask("launch 100 k").startswith("launched")


def test_missing_pid(link_factory):
    link, _ = link_factory()
    with pytest.raises(AttachError, match=r"pid 4194999 does not exist; check the pid"):
        attach(4194999, link)


def test_not_python(processes, link_factory):
    proc = subprocess.Popen(["sleep", "30"])
    processes.append(proc)
    link, _ = link_factory()
    with pytest.raises(AttachError, match=r"\(sleep\) is not a Python process"):
        attach(proc.pid, link)
    assert proc.poll() is None


def test_a_target_exiting_meanwhile_is_said_to_have_exited(processes, link_factory):
    """A process that exits as gtop looks at it (a zombie: /proc still lists it, its
    executable's link is gone) is said to have exited, not to be "not a Python process"
    (seen in a soak: a 14 s target ending during an attach)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    processes.append(proc)
    deadline = time.monotonic() + 10
    while _state(proc.pid) != "Z" and time.monotonic() < deadline:  # exited, not reaped
        time.sleep(0.01)
    link, _ = link_factory()
    with pytest.raises(AttachError, match=rf"^pid {proc.pid} exited; nothing to attach to$"):
        attach(proc.pid, link)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not list(PYENV.glob("3.9.*/bin/python3")), reason="no Python 3.9 here")
def test_python_too_old(processes, link_factory):
    python = str(sorted(PYENV.glob("3.9.*/bin/python3"))[-1])
    target = start_target(processes, script("idle.py", python))
    link, _ = link_factory()
    with pytest.raises(AttachError, match=r"runs Python 3\.9: the agent needs 3\.10\+"):
        attach(target.pid, link)


@pytest.mark.parametrize(
    ("scope", "euid", "target_uid", "message"),
    [
        (1, 1000, 1000, r"ptrace_scope=1\): run gtop as root, or `sudo sysctl"),
        (2, 1000, 1000, r"ptrace_scope=2\)"),
        (3, 0, 1000, r"ptrace is disabled on this machine \(kernel.yama.ptrace_scope=3"),
        (0, 1000, 1001, r"belongs to uid 1001, gtop runs as uid 1000: run gtop as that user"),
    ],
)
def test_ptrace_refusals_name_cause_and_fix(monkeypatch, scope, euid, target_uid, message):
    monkeypatch.setattr(attach_mod, "yama_scope", lambda: scope)
    monkeypatch.setattr(attach_mod, "has_cap_sys_ptrace", lambda: False)
    monkeypatch.setattr(attach_mod.os, "geteuid", lambda: euid)
    with pytest.raises(AttachError, match=message):
        check_ptrace(Target(123, target_uid, (3, 12)))


def test_ptrace_allowed_for_same_user_with_scope_zero(monkeypatch):
    monkeypatch.setattr(attach_mod, "yama_scope", lambda: 0)
    monkeypatch.setattr(attach_mod.os, "geteuid", lambda: 1000)
    check_ptrace(Target(123, 1000, (3, 12)))


def test_inspect_reads_python_version(processes):
    target = start_target(processes, script("idle.py"))
    assert inspect(target.pid).python == sys.version_info[:2]


def test_injector_failure_is_one_line(processes, link_factory, monkeypatch):
    target = start_target(processes, script("idle.py"))
    link, _ = link_factory()
    monkeypatch.setattr(
        injector_mod,
        "INJECTOR",
        "raise SystemExit('gtop: ptrace of pid 1 refused: Operation not permitted')",
    )
    with pytest.raises(AttachError, match=r"ptrace of pid \d+ refused .* CAP_SYS_PTRACE"):
        attach(target.pid, link)
    assert target.readline().startswith("tick")


def test_doctor_reports_each_requirement():
    lines = {name: (ok, detail) for name, ok, detail in attach_mod.doctor()}
    assert set(lines) == {"attach", "ptrace", "libcupti", "nvtx"}
    # it attached to a Python child for real (this machine: root, x86-64, ptrace allowed)
    assert lines["attach"] == (True, lines["attach"][1]) and "(tried)" in lines["attach"][1]
    assert "ptrace_scope" in lines["ptrace"][1]


def test_doctor_says_why_attach_fails(monkeypatch):
    monkeypatch.setattr(injector_mod, "INJECTOR", "raise SystemExit('gtop: ptrace refused')")
    ok, detail = dict((n, (o, d)) for n, o, d in attach_mod.doctor())["attach"]
    assert not ok and detail == "ptrace refused; `gtop run -- CMD` still works"


def test_status_summary_line():
    from gtop.collectors.agent.status import AgentStatus

    line = AgentStatus(1, "tracing", kinds=("kernel",), cupti_version=130001, records=5).summary()
    # kernel records without graph-level tracing: CUDA graphs show node by node
    assert line == (
        "agent tracing | kernel | CUDA graphs per node | CUPTI 13.0 | 5 records | 0 dropped"
    )


@pytest.mark.parametrize("python", [sys.executable, *other_pythons()])
def test_python_version_read_without_map_files(processes, monkeypatch, python):
    """gtop as the target's own user cannot open /proc/PID/map_files (root only): the
    version still comes from the mapped libpython (or the executable), nothing is run."""
    from gtop.collectors.agent import pyversion

    real = pyversion.open_regular

    def user_open(path, *args, **kwargs):
        if "/map_files/" in str(path):
            raise PermissionError(1, "Operation not permitted", str(path))
        return real(path, *args, **kwargs)

    version = subprocess.check_output([python, "-c", "import sys; print(*sys.version_info[:2])"])
    target = start_target(processes, script("idle.py", python))
    monkeypatch.setattr(pyversion, "open_regular", user_open)
    monkeypatch.setattr(subprocess, "run", None)  # running anything would fail loudly
    maps = Path(f"/proc/{target.pid}/maps").read_text()
    assert pyversion.python_version(target.pid, maps) == tuple(map(int, version.split()))


def test_attach_after_cuda_started_leaves_graph_level_tracing_off(
    processes, fake_libs, link_factory
):
    """CUDA graphs made before an attach crashed at their next launch once CUPTI's
    GRAPH_TRACE was turned on (H200, CUDA 13.0): an agent that starts after CUDA traces
    graph nodes as kernels, says why, and keeps it so when asked for graph level."""
    from gtop.agent.cupti import CONCURRENT_KERNEL, GRAPH_TRACE

    target = start_target(processes, script("fake_gpu.py"), fake_libs)
    assert target.ask("init") == "ok"  # CUDA up before gtop comes
    link, _ = link_factory(mode="default")
    status = attach(target.pid, link)
    if status.state != "tracing":
        status = link.wait(target.pid, ("tracing",), 10)
    assert status is not None and "graph" not in status.kinds and "kernel" in status.kinds
    assert status.message.startswith("graph: left off")
    mask = int(target.ask("mask").split()[1])
    assert mask & (1 << CONCURRENT_KERNEL) and not mask & (1 << GRAPH_TRACE)
    link.set_kinds(["graph", "kernel"], target.pid)  # the Kernels tab's g key
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and link.status()[target.pid].kinds != ("kernel",):
        time.sleep(0.05)
    assert link.status()[target.pid].kinds == ("kernel",)
    assert not int(target.ask("mask").split()[1]) & (1 << GRAPH_TRACE)
    link.stop()
    assert target.ask("launch 10 k").startswith("launched")
