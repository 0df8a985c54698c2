"""An attach begun before the session (``gtop --pid``: before its heavy imports), for
real on CPU: the injector child reads the target and the agent is queued while gtop has
no link yet; the agent waits in the socket's backlog and reports to the link made after.
Cancelled unused, it leaves the target as it was."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_helpers import script, start_target

from gtop.collectors.agent.attach import AttachError, PendingAttach, attach
from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

REPO = Path(__file__).resolve().parents[2]


def test_agent_queued_before_the_link_reports_to_it(processes):
    target = start_target(processes, script("idle.py"))
    pending = PendingAttach(target.pid, "default")
    pending.wait()  # queued; nothing accepts on the folder's socket yet
    time.sleep(0.3)  # the agent has started and dialled meanwhile
    link = AgentLink(Hub(), folder=pending.folder).start()
    try:
        status = attach(target.pid, link, timeout=10, pending=pending)
        assert status.state == "waiting_cuda"
        assert status.argv == (str(Path(script("idle.py")[1])),)
    finally:
        link.stop()
    assert link.status()[target.pid].state == "detached"
    assert target.readline().startswith("tick")
    assert target.proc.poll() is None
    assert not pending.folder.dir.exists()


def test_cancelled_before_use_leaves_the_target_untouched(processes):
    target = start_target(processes, script("idle.py"))
    pending = PendingAttach(target.pid, "default")
    pending.cancel()
    assert not pending.folder.dir.exists()
    assert _tracer(target.pid) == 0
    assert target.readline().startswith("tick")
    assert not pending.queued  # cancelled long before the child could report


def _tracer(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    return -1


def test_the_target_is_read_by_the_child_not_by_gtop(processes):
    """gtop's own interpreter never parses the target's ELF files (their reader stays
    unloaded): that work runs in the injector child, off gtop's GIL."""
    target = start_target(processes, script("idle.py"))
    code = (
        "import sys\n"
        "from gtop.collectors.agent.attach import PendingAttach\n"
        f"p = PendingAttach({target.pid}, 'default')\n"
        "p.wait()\n"
        "p.cancel()\n"
        "print(sorted(m for m in sys.modules if m.endswith(('.elfsyms', '.procsyms'))))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{REPO}:{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"
    assert target.readline().startswith("tick")


def test_a_pending_attach_to_no_python_says_so(processes, link_factory):
    proc = subprocess.Popen(["sleep", "30"])
    processes.append(proc)
    pending = PendingAttach(proc.pid, "default")
    link = AgentLink(Hub(), folder=pending.folder).start()
    try:
        with pytest.raises(AttachError, match=r"\(sleep\) is not a Python process"):
            attach(proc.pid, link, timeout=5, pending=pending)
    finally:
        link.stop()
    assert proc.poll() is None
