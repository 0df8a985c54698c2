"""``gtop run`` loading: the agent starts in every Python process with no change to CMD."""

from __future__ import annotations

import sys

from conftest import TARGETS, start_target


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


def test_script_path_and_output_untouched(processes, link_factory):
    link, _ = link_factory()
    target = start_target(processes, [sys.executable, str(TARGETS / "idle.py")], None, link)
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None
    assert target.readline().startswith("tick")  # stdout carries only the program's lines


def test_without_a_link_nothing_is_loaded(processes):
    target = start_target(processes, [sys.executable, "-m", "modpkg"], {"PYTHONPATH": str(TARGETS)})
    assert target.ask("agent?") == "agent False"
