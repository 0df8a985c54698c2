"""A root gtop attaching to an unprivileged user's process lends that user nothing:
it never runs a file the user controls, and writes nothing where the user can plant."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
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


def fake_python(attacker, folder: Path, name: str, tmp_path: Path) -> tuple[Path, Path]:
    """A user's binary called ``name`` that records who runs it: (binary, record)."""
    mark, exe, src = folder / "ran", folder / name, tmp_path / "fake.c"
    src.write_text(FAKE_PYTHON_C)
    subprocess.run(["gcc", f'-DMARK="{mark}"', "-o", str(exe), str(src)], check=True)
    os.chown(exe, attacker.uid, attacker.gid)
    return exe, mark


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the fake python")
@pytest.mark.parametrize("name", ["python", "python3.14", "python3.12"])
def test_a_binary_named_python_is_never_run_by_root(
    attacker, user_dir, processes, link, tmp_path, name
):
    exe, mark = fake_python(attacker, user_dir, name, tmp_path)
    proc = attacker.popen([str(exe)], stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    wait_ready(proc)
    t0 = time.monotonic()
    with pytest.raises(AttachError, match=rf"\({name[:15]}\) is not a Python process"):
        attach(proc.pid, link)
    assert time.monotonic() - t0 < 5
    assert mark.read_text().split() == [str(attacker.uid)], "the target's file ran as root"
    assert proc.poll() is None  # and nothing was injected into it


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the fake python")
def test_gtop_record_pid_as_root_runs_nothing_of_the_user(attacker, user_dir, processes, tmp_path):
    """The whole command line: `gtop record --pid` on a binary named python3.12."""
    exe, mark = fake_python(attacker, user_dir, "python3.12", tmp_path)
    proc = attacker.popen([str(exe)], stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    wait_ready(proc)
    out = tmp_path / "r.gtop"
    cmd = [sys.executable, "-m", "gtop", "record", "--pid", str(proc.pid), "-o", str(out)]
    res = subprocess.run(
        [*cmd, "--duration", "1", "--host-tier", "proc"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "is not a Python process" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert mark.read_text().split() == [str(attacker.uid)], "the target's file ran as root"
    assert proc.poll() is None


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


def test_attach_to_another_user_lends_nothing(attacker, processes, link, tmp_path):
    code = "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)"
    proc = attacker.popen([attacker.python, "-c", code], stdout=subprocess.PIPE, text=True)
    processes.append(proc)
    wait_ready(proc)
    status = attach(proc.pid, link)
    assert status.state == "waiting_cuda"  # the agent got in and runs as that user
    check_unplantable(link, attacker, tmp_path)
