"""``gtop run`` loading: the agent starts in every Python process with no change to CMD."""

from __future__ import annotations

import sys

import pytest
from agent_helpers import TARGETS, start_target

from gtop.collectors.agent.attach import AttachError, attach, launch_with_agent


def test_python_dash_m_gets_the_agent_and_a_clean_sys_path(processes, link_factory):
    link, _ = link_factory()
    target = start_target(
        processes, [sys.executable, "-m", "modpkg"], {"PYTHONPATH": str(TARGETS)}, link
    )
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None
    assert target.ask("agent?") == "agent True"
    assert target.ask("path?") == "path False"
    target.send("exit")
    assert target.proc.wait(10) == 0
    assert link.wait(target.pid, ("exited",), 10) is not None


def test_user_sitecustomize_still_runs(processes, link_factory):
    link, _ = link_factory()
    env = {"PYTHONPATH": f"{TARGETS}:{TARGETS / 'usersite'}"}
    target = start_target(processes, [sys.executable, "-m", "modpkg"], env, link)
    assert target.ask("custom?") == "custom True"
    assert target.ask("agent?") == "agent True"
    # Austin names files by their string's address: neither module's name may be freed
    # for a later file's to take its place (gtop's boot folder, then the user's)
    kept = target.ask("kept?").split()
    assert kept[0] == "kept" and len(kept) == 3 and kept[2] == "usersite", kept
    assert kept[1] != "usersite", kept  # the boot folder gtop wrote


def test_script_path_and_output_untouched(processes, link_factory):
    link, _ = link_factory()
    target = start_target(processes, [sys.executable, str(TARGETS / "idle.py")], None, link)
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None
    assert target.readline().startswith("tick")  # stdout carries only the program's lines


def test_without_a_link_nothing_is_loaded(processes):
    target = start_target(processes, [sys.executable, "-m", "modpkg"], {"PYTHONPATH": str(TARGETS)})
    assert target.ask("agent?") == "agent False"


def test_python_started_by_a_shell_script_gets_the_agent(processes, link_factory):
    link, _ = link_factory()
    cmd = ["bash", "-c", f"exec {sys.executable} {TARGETS / 'idle.py'}"]
    target = start_target(processes, cmd, None, link)
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None


def test_a_non_python_command_runs_untouched(processes, link_factory):
    link, _ = link_factory()
    proc = launch_with_agent(["true"], link)
    processes.append(proc)
    assert proc.wait(10) == 0
    assert link.wait(None, ("waiting_cuda",), 0.5) is None


def test_missing_command_is_one_line(link_factory):
    link, _ = link_factory()
    with pytest.raises(AttachError, match=r"cannot start 'no-such-cmd-xyz'.*check the command"):
        launch_with_agent(["no-such-cmd-xyz"], link)


def test_agent_works_in_a_process_with_many_open_files(processes, link_factory, tmp_path):
    # the agent's socket gets a descriptor above 1024, beyond what select() can watch
    link, _ = link_factory()
    code = (
        "import os, resource, runpy, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))\n"
        f"fds = [os.open({str(tmp_path)!r}, os.O_RDONLY) for _ in range(1500)]\n"
        "runpy.run_module('modpkg', run_name='__main__')\n"
    )
    target = start_target(processes, [sys.executable, "-c", code], {"PYTHONPATH": str(TARGETS)})
    assert attach(target.pid, link).state == "waiting_cuda"
    assert link.wait(target.pid, ("error",), 1.5) is None
    link.stop()
    assert link.status()[target.pid].state == "detached"
    assert target.ask("agent?") == "agent True"
