"""The agent changes nothing the target can see: its own ``gtop`` module stays its own,
and the agent's code imports nothing outside its private copy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from agent_helpers import start_target

from gtop.collectors.agent.attach import launch_with_agent


def test_target_importing_its_own_gtop_gets_its_own(processes, link_factory, tmp_path):
    (tmp_path / "gtop").mkdir()
    (tmp_path / "gtop" / "__init__.py").write_text("MINE = True\n")
    code = textwrap.dedent(
        """
        import sys
        print("ready", flush=True)
        sys.stdin.readline()
        sys.path[:] = [p for p in sys.path if p]  # not the repository we run from
        import gtop
        print(getattr(gtop, "MINE", False), gtop.__file__, flush=True)
        """
    )
    link, _ = link_factory()
    target = start_target(
        processes, [sys.executable, "-c", code], {"PYTHONPATH": str(tmp_path)}, link
    )
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None  # the agent runs
    assert target.ask("go") == f"True {tmp_path / 'gtop' / '__init__.py'}"


def test_the_agents_copy_imports_only_itself(link_factory):
    """Import every module of the boot folder's copy: nothing named ``gtop`` loads."""
    link, _ = link_factory()
    package = link.boot.package
    code = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        sys.path.insert(0, {link.boot_dir!r})
        pkg = importlib.import_module({package!r})
        names = [m.name for m in pkgutil.walk_packages(pkg.__path__, {package + "."!r})]
        for name in names:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as e:  # a third-party package missing here
                if e.name.split(".")[0] in ("gtop", {package!r}):
                    raise
        leaked = sorted(m for m in sys.modules if m == "gtop" or m.startswith("gtop."))
        print(len(names), leaked)
        """
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    count, leaked = out.stdout.split(" ", 1)
    assert int(count) > 20
    assert leaked.strip() == "[]"


CLOSE_FDS = textwrap.dedent(
    """
    import os, sys, time
    print("ready", flush=True)
    for line in sys.stdin:
        os.closerange(3, 4096)  # as daemons and exec wrappers do
        fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        time.sleep(0.5)  # the agent's thread wakes several times meanwhile
        try:
            os.write(fd, b"0123456789")
            os.lseek(fd, 0, 0)
            print("ok", os.read(fd, 10).decode(), flush=True)
            os.close(fd)
        except OSError as e:
            print("error", e.strerror, flush=True)
    """
)


def test_agent_never_closes_a_descriptor_the_target_took_over(processes, link_factory, tmp_path):
    link, got = link_factory()
    cmd = [sys.executable, "-c", CLOSE_FDS, str(tmp_path / "file")]
    target = start_target(processes, cmd, None, link)
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None
    for _ in range(5):
        assert target.ask("go") == "ok 0123456789"
    # the agent noticed, forgot its descriptor without closing it, and dialled again
    deadline = time.monotonic() + 10
    states: list[str] = []
    while time.monotonic() < deadline:
        got.poll()
        states = [e.value["state"] for e in got.entities if e.kind == "agent"]
        if states.count("waiting_cuda") >= 2:
            break
        time.sleep(0.05)
    assert "detached" in states and states[-1] == "waiting_cuda", states


FORKS = textwrap.dedent(
    """
    import os, sys, time
    child = os.fork()
    if child == 0:
        time.sleep(60)
        os._exit(0)
    print("ready", child, flush=True)
    time.sleep(60)
    """
)


def test_a_forked_child_does_not_keep_the_agents_socket(processes, link_factory):
    link, _ = link_factory()
    proc = launch_with_agent([sys.executable, "-c", FORKS], link, stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    child = int(proc.stdout.readline().split()[1])
    try:
        assert link.wait(proc.pid, ("waiting_cuda",), 10) is not None
        proc.send_signal(signal.SIGKILL)  # no goodbye: only end of file tells gtop
        assert link.wait(proc.pid, ("exited", "detached"), 5) is not None
    finally:
        os.kill(child, signal.SIGKILL)


STOP_COST = textwrap.dedent(
    """
    import sys, time
    agent = next(m for n, m in sys.modules.items() if n.endswith(".agent.runtime"))
    time.sleep(float(sys.argv[1]))  # connected, waiting for CUDA (in a 0.25 s poll)
    t0 = time.perf_counter()
    agent.stop()
    print(time.perf_counter() - t0)
    """
)


def test_exit_does_not_wait_for_the_agents_poll(link_factory):
    """``python -c pass`` under gtop: the exit handler used to wait up to a poll period
    (0.25 s) for the agent's thread; woken, it says goodbye at once."""
    link, _ = link_factory()
    env = link.launch_env()
    costs = []
    for i in range(5):
        out = subprocess.run(
            [sys.executable, "-c", STOP_COST, str(0.3 + 0.05 * i)],  # not poll-aligned
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        costs.append(float(out.stdout))
    assert sorted(costs)[2] < 0.06, costs
    assert sum(st.state == "exited" for st in link.status().values()) == 5
