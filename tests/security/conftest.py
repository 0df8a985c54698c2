"""Fixtures for the security tests: an unprivileged user (created when missing, as CI
runs as root) whose processes play the attacker against a root gtop."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

USER = "gtop-sec-test"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: str
    python: str
    """A Python this user can run (not gtop's, which may sit in root's home)."""

    def popen(self, cmd: list[str], **kwargs: object) -> subprocess.Popen:
        """Start ``cmd`` as this user (no supplementary groups), in its home."""
        env = {"PATH": "/usr/bin:/bin", "HOME": self.home, **kwargs.pop("env", {})}  # type: ignore[dict-item]
        if "LD_LIBRARY_PATH" in os.environ:  # where the machine's CUDA libraries are
            env.setdefault("LD_LIBRARY_PATH", os.environ["LD_LIBRARY_PATH"])
        return subprocess.Popen(
            cmd, user=self.uid, group=self.gid, extra_groups=[], cwd=self.home, env=env, **kwargs
        )  # type: ignore[call-overload]


@pytest.fixture(scope="session")
def attacker() -> User:
    """An unprivileged user, with gtop (these tests) running as root."""
    if os.geteuid() != 0:
        pytest.skip("the security tests run gtop as root against an unprivileged user")
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("no useradd to create the unprivileged user")
        # another xdist worker may be creating it at the same moment: then it exists
        subprocess.run(["useradd", "--system", "--create-home", "--shell", "/bin/sh", USER])
        entry = pwd.getpwnam(USER)
    os.makedirs(entry.pw_dir, exist_ok=True)
    os.chown(entry.pw_dir, entry.pw_uid, entry.pw_gid)
    os.chmod(entry.pw_dir, 0o755)
    user = User(USER, entry.pw_uid, entry.pw_gid, entry.pw_dir, sys.executable)
    with contextlib.suppress(OSError):  # not even executable for the user
        if user.popen([sys.executable, "-c", "pass"], stderr=subprocess.DEVNULL).wait(60) == 0:
            return user  # gtop's own Python (with its packages) is open to the user
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if python is None:
        pytest.skip("no Python the unprivileged user can run")
    return User(USER, entry.pw_uid, entry.pw_gid, entry.pw_dir, python)


@pytest.fixture
def user_dir(attacker) -> Iterator[Path]:
    """A fresh folder of the unprivileged user's, in its home (tests run in parallel)."""
    path = Path(tempfile.mkdtemp(dir=attacker.home))
    os.chown(path, attacker.uid, attacker.gid)
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)
