"""Temporary folders do not pile up: a killed gtop's link folder and a target's Triton
compile cache are removed by the next one of the same user, never anyone else's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from gtop.agent import tmpdirs
from gtop.agent.triton_probes import TMP_PREFIX as TRITON_PREFIX
from gtop.agent.triton_probes import TritonProbes
from gtop.collectors.agent.folder import TMP_PREFIX as LINK_PREFIX
from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

TMP = Path(tempfile.gettempdir())


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_sigkilled_gtops_folder_is_removed_by_the_next(processes):
    code = textwrap.dedent(
        """
        from gtop.collectors.agent.link import AgentLink
        from gtop.core.hub import Hub
        link = AgentLink(Hub()).start()
        print(link.dir, flush=True)
        import time; time.sleep(60)
        """
    )
    gtop = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    processes.append(gtop)
    left = Path(gtop.stdout.readline().strip())
    assert left.is_dir() and left.name.startswith(f"{LINK_PREFIX}{gtop.pid}-")
    gtop.send_signal(signal.SIGKILL)
    gtop.wait(10)
    assert left.is_dir()  # killed: nothing removed it
    link = AgentLink(Hub())
    try:
        assert not left.exists()
    finally:
        link.stop()
    assert not link.dir.exists()  # and a stopped link leaves nothing


def test_only_our_users_folders_of_gone_processes_are_removed(attacker, tmp_path):
    pid = dead_pid()
    ours_gone = tmp_path / f"gtop-x-{pid}-aaaa"
    ours_alive = tmp_path / f"gtop-x-{os.getpid()}-bbbb"
    theirs_gone = tmp_path / f"gtop-x-{pid}-cccc"
    link_gone = tmp_path / f"gtop-x-{pid}-dddd"
    target = tmp_path / "target"
    for d in (ours_gone, ours_alive, theirs_gone, target):
        d.mkdir()
    (target / "keep").write_text("")
    link_gone.symlink_to(target)
    os.chown(theirs_gone, attacker.uid, attacker.gid)
    (ours_gone / "sub").mkdir()
    (ours_gone / "sub" / "escape").symlink_to(target)
    assert tmpdirs.remove_stale("gtop-x-", str(tmp_path)) == [ours_gone.name]
    assert not ours_gone.exists()
    assert ours_alive.is_dir() and theirs_gone.is_dir() and link_gone.is_symlink()
    assert (target / "keep").exists()  # the link inside was removed, not followed


def test_triton_compile_cache_goes_with_the_probes():
    stale = TMP / f"{TRITON_PREFIX}{dead_pid()}-zzzz"
    stale.mkdir()
    probes = TritonProbes()
    cache = probes._cache_root
    assert cache.is_dir() and not stale.exists()
    probes.close()
    assert not cache.exists()
