"""The agent's boot folder carries the bytecode gtop's interpreter compiled of the agent
(as a pip install has it), so a target of that Python imports the agent without compiling
it; a source changed since its bytecode was compiled gets none."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from importlib.util import cache_from_source
from pathlib import Path

import gtop
from gtop.collectors.agent.boot import BootDir

AGENT = Path(gtop.__file__).resolve().parent / "agent"


def test_the_agents_bytecode_goes_along_and_is_used(tmp_path: Path) -> None:
    source = AGENT / "wire.py"
    py_compile.compile(str(source), doraise=True)  # as pip compiles a package it installs
    boot = BootDir(tmp_path / "boot")
    boot.bytecode.join(30)
    copy = tmp_path / "boot" / boot.package / "agent" / "wire.py"
    assert (
        Path(cache_from_source(str(copy))).read_bytes()
        == Path(cache_from_source(str(source))).read_bytes()
    )
    assert copy.stat().st_mtime_ns == source.stat().st_mtime_ns
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    folder = str(tmp_path / "boot")
    code = f"import sys; sys.path.insert(0, {folder!r}); import {boot.package}.agent.wire"
    argv = [sys.executable, "-I", "-v", "-c", code]
    res = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    assert f"{cache_from_source(str(copy))} matches {copy}" in res.stderr


def test_bytecode_of_another_source_stays_behind(tmp_path: Path) -> None:
    """The package's bytecode is older than its source (edited since): not copied."""
    source = AGENT / "modes.py"
    py_compile.compile(str(source), doraise=True)
    cached = Path(cache_from_source(str(source)))
    stale = cached.read_bytes()
    try:
        stamp = int.from_bytes(stale[8:12], "little") - 1
        cached.write_bytes(stale[:8] + stamp.to_bytes(4, "little") + stale[12:])
        boot = BootDir(tmp_path / "boot")
        boot.bytecode.join(30)
        copy = tmp_path / "boot" / boot.package / "agent" / "modes.py"
        assert copy.exists() and not Path(cache_from_source(str(copy))).exists()
    finally:
        cached.write_bytes(stale)
