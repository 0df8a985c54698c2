"""A root gtop attaching to an unprivileged user's process lends that user nothing:
it never runs a file the user controls, and writes nothing where the user can plant."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from gtop.collectors.agent.attach import AttachError, Target, attach, remote_exec
from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

FAKE_PYTHON_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    FILE *f = fopen(MARK, "a");  /* who ran me */
    if (f) { fprintf(f, "%d\n", (int)getuid()); fclose(f); }
    puts("ready"); fflush(stdout);
    sleep(120);
    return 0;
}
"""


@pytest.fixture
def link():
    link = AgentLink(Hub()).start()
    yield link
    link.stop()


def wait_ready(proc: subprocess.Popen) -> None:
    assert proc.stdout.readline().strip() == "ready"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the fake python")
@pytest.mark.parametrize("name", ["python", "python3.14", "python3.12"])
def test_a_binary_named_python_is_never_run_by_root(attacker, processes, link, tmp_path, name):
    home = Path(attacker.home)
    mark = home / f"ran-{name}"
    mark.unlink(missing_ok=True)
    src, exe = tmp_path / "fake.c", home / "bin" / name
    exe.parent.mkdir(exist_ok=True)
    os.chown(exe.parent, attacker.uid, attacker.gid)
    src.write_text(FAKE_PYTHON_C)
    subprocess.run(["gcc", f'-DMARK="{mark}"', "-o", str(exe), str(src)], check=True)
    os.chown(exe, attacker.uid, attacker.gid)
    proc = attacker.popen([str(exe)], stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    wait_ready(proc)
    t0 = time.monotonic()
    with pytest.raises(AttachError, match=rf"\({name[:15]}\) is not a Python process"):
        attach(proc.pid, link)
    assert time.monotonic() - t0 < 5
    assert mark.read_text().split() == [str(attacker.uid)], "the target's file ran as root"
    assert proc.poll() is None  # and nothing was injected into it


def test_remote_exec_never_runs_the_targets_executable(monkeypatch, tmp_path):
    """3.14 targets: sys.remote_exec from gtop's own interpreter, or a clear refusal."""
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: ran.append(a))
    if sys.version_info[:2] != (3, 14):
        with pytest.raises(AttachError, match=r"needs gtop itself on Python 3\.14"):
            remote_exec(Target(os.getpid(), 0, (3, 14)), str(tmp_path), "pass")
    assert ran == []


def check_unplantable(link: AgentLink, attacker, tmp_path: Path) -> None:
    """Every folder gtop writes in is root's and the attacker's links bounce off it."""
    folders = [link.dir, *(p for p in link.dir.rglob("*") if p.is_dir())]
    for folder in folders:
        st = folder.lstat()
        assert st.st_uid == 0 and not st.st_mode & 0o022, folder
    for path in link.dir.rglob("*"):
        assert path.lstat().st_uid == (attacker.uid if path.name == "agent.sock" else 0), path
    victim = tmp_path / "victim"
    victim.write_text("precious")
    plant = (
        "import os, sys\n"
        "for d in sys.argv[2:]:\n"
        "    for name in ('attach.py', 'attach-0.py', 'sitecustomize.py', 'x'):\n"
        "        try:\n"
        "            os.symlink(sys.argv[1], os.path.join(d, name)); print('planted', d)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    out = attacker.popen(
        [attacker.python, "-c", plant, str(victim), *map(str, folders)],
        stdout=subprocess.PIPE,
        text=True,
    ).communicate(timeout=30)[0]
    assert out == ""
    assert victim.read_text() == "precious"


def test_granted_link_folders_stay_roots(attacker, link, tmp_path):
    link.grant(attacker.uid)
    check_unplantable(link, attacker, tmp_path)
    # the user can still read the agent's code, as its process must
    code = f"import os; print(sorted(os.listdir({link.boot_dir!r})))"
    out = attacker.popen(
        [attacker.python, "-c", code], stdout=subprocess.PIPE, text=True
    ).communicate(timeout=30)[0]
    assert "sitecustomize.py" in out


def hypno_readable_by(attacker) -> bool:
    """hypno injects its own library into the target: the target's user must read it."""
    spec = find_spec("hypno")
    if spec is None or spec.origin is None:
        return False
    probe = f"open({spec.origin!r}).close()"
    return attacker.popen([attacker.python, "-c", probe], stderr=subprocess.DEVNULL).wait(30) == 0


def test_attach_to_another_user_lends_nothing(attacker, processes, link, tmp_path):
    if not hypno_readable_by(attacker):
        pytest.skip("hypno is installed where the unprivileged user cannot read it")
    code = "import time; print('ready', flush=True); time.sleep(120)"
    proc = attacker.popen([attacker.python, "-c", code], stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    wait_ready(proc)
    status = attach(proc.pid, link)
    assert status.state == "waiting_cuda"  # the agent got in and runs as that user
    check_unplantable(link, attacker, tmp_path)
