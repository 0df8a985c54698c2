"""The wheel as a user gets it: built with ``pip wheel .``, installed into a plain venv (no
system site-packages, no PYTHONPATH, another directory), and ``gtop demo`` run from there;
once with the newest dependencies the declared ranges allow, once with exactly the
declared minimums (the floors in pyproject.toml are tested, not guessed). Each runs the
UI's first frames under the pilot, ``report``, an ``export``, ``serve`` (scraped) and
``demo --once``.

Dependencies install with ``--no-index`` from a wheelhouse kept between runs
(``~/.cache/gtop-test-wheels``), downloaded into it when it lacks some. With the newest
allowed versions, a warm wheelhouse can hold older ones that still satisfy the ranges:
the floors test is the exact one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest

from tests.serve_metrics import scrape

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "recordings" / "idle_busy_idle.gtop"
WHEELHOUSE = Path.home() / ".cache" / "gtop-test-wheels"
SHIPPED = [
    "gtop/demo/loader-1-worker.gtop",
    "gtop/demo/idle_busy_idle.gtop",
    "gtop/collectors/threads/ebpf/offcpu.bpf.o",
    "gtop/collectors/threads/ebpf/offcpu.bpf.c",
    "gtop/collectors/threads/ebpf/offcpu.h",
    "gtop/agent/cupti_shim.c",
    "gtop/analysis/loops.c",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "gtop").rglob("*.tcss")),
]
"""Files beside the code that gtop needs at run time."""
UI_SMOKE = """
import asyncio
from gtop.cli.replay import demo_recording
from gtop.recordings.reader import Recording
from gtop.session.replay import ReplaySource
from gtop.views.app import GtopApp

async def main():
    source = ReplaySource(Recording(demo_recording()))
    source.open_at_answer()  # as gtop demo opens: the target's process screen
    app = GtopApp(source, start_pid=source.pid)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        for _ in range(8):  # every tab's widgets mount
            await pilot.press("]")
            await pilot.pause(0.2)
        print(type(app.screen).__name__)

asyncio.run(main())
"""
"""The UI under Textual's pilot, from the installed wheel: every tab of the process screen
the demo opens on (their CSS is parsed as they mount)."""


def plain_env() -> dict[str, str]:
    """This environment without what would import another gtop than the venv's."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(*cmd: str | Path, cwd: Path | None = None, timeout: float = 300) -> str:
    out = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=plain_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, f"{cmd}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
    return out.stdout


@contextlib.contextmanager
def shared_lock() -> Iterator[None]:
    """Held by one test process at a time (xdist runs this module's tests side by side)."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    with (WHEELHOUSE / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    with shared_lock():  # setuptools builds in the tree (build/): one build at a time
        run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
            "-w", dist, REPO)  # fmt: skip
    (built,) = dist.glob("*.whl")
    return built


def requirements(wheel: Path) -> list[str]:
    """The wheel's own Requires-Dist lines, without extras."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(name).decode())
    return [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]


def minimums(reqs: list[str]) -> list[str]:
    """``name>=X`` (with or without a ``<Y`` cap) → ``name==X`` for every requirement."""
    pins = []
    for req in reqs:
        found = re.fullmatch(
            r"([\w.-]+)\s*(?:<[\w.]+\s*,\s*)?>=\s*([\w.]+)(?:\s*,\s*<[\w.]+)?", req.strip()
        )
        assert found, f"requirement without a plain floor: {req}"
        pins.append(f"{found[1]}=={found[2]}")
    return pins


def install_and_run_demo(wheel: Path, reqs: list[str], venv: Path) -> str:
    """A plain venv (made without pip: this Python's pip installs into it) with ``wheel``
    and ``reqs`` from the wheelhouse, filled from the index only when it lacks some.
    Installed without compiling every module of every package (2.7 s CPU a venv): the
    venv's Python compiles what the commands below import."""
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    install = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install",
               "--no-compile", "-q", "--no-index", "--find-links", WHEELHOUSE, wheel,
               *reqs]  # fmt: skip
    try:
        run(*install)
    except AssertionError:  # not all in the wheelhouse yet
        py = f"{sys.version_info.major}.{sys.version_info.minor}"
        with shared_lock():  # xdist workers share the wheelhouse
            run(sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:",
                "--python-version", py, "-d", WHEELHOUSE, *reqs)  # fmt: skip
        run(*install)
    ui = run(venv / "bin" / "python", "-c", UI_SMOKE, cwd=venv)
    assert ui.strip().endswith("ProcessScreen"), ui
    run_the_commands(venv)
    return run(venv / "bin" / "gtop", "demo", "--once", cwd=venv)


def run_the_commands(venv: Path) -> None:
    """``report``, an ``export`` and ``serve`` (scraped) from the venv's gtop."""
    gtop = venv / "bin" / "gtop"
    assert "Window:" in run(gtop, "report", DEMO, cwd=venv)
    out = venv / "out.json"
    run(gtop, "export", DEMO, "--format", "chrome", "-o", out, cwd=venv)
    assert json.loads(out.read_text())["traceEvents"]
    families = scrape(DEMO, 10.0, (str(gtop),), plain_env())
    assert "DCGM_FI_DEV_GPU_UTIL" in families, sorted(families)


def test_wheel_holds_what_gtop_needs_and_says_its_platform(wheel: Path) -> None:
    assert wheel.name.endswith("-py3-none-manylinux2014_x86_64.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = [f for f in SHIPPED if f not in names]
    assert not missing, missing
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith(("tests/", "recordings/", "benchmarks/")) for n in names)


def test_demo_runs_from_the_wheel_in_a_plain_venv(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    text = install_and_run_demo(wheel, requirements(wheel), venv)
    assert re.search(r"GPU 0 NVIDIA H200\s+util", text), text
    assert "steady 4.0–8.7 s · GPU idle 79%: mostly waiting for input data" in text, text
    assert (venv / "lib").is_dir() and not list(venv.glob("lib/python*/site-packages/tests"))
    version = run(venv / "bin" / "gtop", "--version", cwd=tmp_path)
    assert version.startswith("gtop 0.")


def test_demo_runs_with_the_declared_minimum_versions(wheel: Path, tmp_path: Path) -> None:
    pins = minimums(requirements(wheel))
    text = install_and_run_demo(wheel, pins, tmp_path / "venv")
    assert "waiting for input data" in text, text
