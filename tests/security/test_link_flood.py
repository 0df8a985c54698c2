"""A flood of connections to gtop's agent socket (each from its own process, until gtop
runs out of descriptors) is refused and counted; the link thread lives on and takes the
next agent."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

from gtop.core.hub import Hub

HOST = textwrap.dedent(
    """
    import resource, sys
    from gtop.collectors.agent.link import AgentLink
    from gtop.core.hub import Hub
    link = AgentLink(Hub()).start()
    resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))
    print(link.path, flush=True)
    for line in sys.stdin:
        st = link.status().get(int(line))
        print(link._thread.is_alive(), link.refused[0], st.state if st else "-", flush=True)
    """
)

FLOOD = textwrap.dedent(
    """
    import os, socket, sys, time
    for _ in range(int(sys.argv[2])):
        if os.fork() == 0:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            time.sleep(60)
            os._exit(0)
    print("flooded", flush=True)
    time.sleep(60)
    """
)


def test_flood_is_refused_and_the_link_lives(processes):
    host = subprocess.Popen(
        [sys.executable, "-c", HOST], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    processes.append(host)
    path = host.stdout.readline().strip()

    def ask() -> list[str]:
        host.stdin.write(f"{os.getpid()}\n")
        host.stdin.flush()
        return host.stdout.readline().split()

    flood = subprocess.Popen(
        [sys.executable, "-c", FLOOD, path, "80"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    processes.append(flood)
    assert flood.stdout.readline().strip() == "flooded"
    time.sleep(1.0)
    alive, refused, _ = ask()
    assert alive == "True" and int(refused) > 0
    os.killpg(flood.pid, signal.SIGKILL)
    flood.wait(10)
    time.sleep(0.5)  # the link sees every flooding connection end
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)  # an agent after the flood: taken
        deadline = time.monotonic() + 5
        while (state := ask()[2]) != "connected" and time.monotonic() < deadline:
            time.sleep(0.1)
    assert state == "connected"
    assert ask()[0] == "True"


HOLDER = textwrap.dedent(
    """
    import socket, sys, time
    from gtop.agent import wire
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(wire.HEADER.pack(wire.BUFFER, 0, 32 << 20) + bytes(1 << 20))
    print("sent", flush=True)
    time.sleep(60)
    """
)


def test_unfinished_frames_cannot_fill_gtops_memory(monkeypatch, processes):
    """Agents announcing big frames and never finishing them are cut off past the cap."""
    from gtop.collectors.agent import link as link_mod

    monkeypatch.setattr(link_mod, "MAX_PENDING_BYTES", 3 << 20)
    link = link_mod.AgentLink(Hub()).start()
    try:
        for _ in range(4):  # 4 processes holding 1 MiB each pass 3 MiB
            p = subprocess.Popen(
                [sys.executable, "-c", HOLDER, link.path], stdout=subprocess.PIPE, text=True
            )
            processes.append(p)
            assert p.stdout.readline().strip() == "sent"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            errors = [st for st in link.status().values() if st.state == "error"]
            if errors:
                break
            time.sleep(0.05)
        assert errors and "unfinished frames" in errors[0].message
        assert link._thread.is_alive()
    finally:
        link.stop()
