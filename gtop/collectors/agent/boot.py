"""The agent's boot folder: what a launched or attached Python process imports the agent
from (a private copy of the agent's code, with the bytecode gtop's interpreter compiled of
it, a ``sitecustomize`` for launches, the built C shim), and the two ways in: the
environment for a launch, the code for an injection.

The copy's package has a random name (``_gtop_<16 hex>``), so a target that imports its
own ``gtop`` gets its own, and the agent's modules (which import each other relatively)
never collide with anything the target has. Everything in the folder is written by gtop's
user, new (``O_EXCL``), never through a link; when root attaches to another user's
process the folder stays root's and only the socket is handed over (see
:meth:`gtop.collectors.agent.link.AgentLink.grant`), so that user can read the agent's
code but can neither change it nor plant anything gtop would later write through.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import secrets
import threading
from pathlib import Path
from typing import Any

import gtop
from gtop.agent import bootstrap, nvtx, shim_blob
from gtop.agent.modes import kinds_for
from gtop.core.files import create_new

AGENT_CODE = (
    "__init__.py",
    "agent",
    "cupti/__init__.py",
    "cupti/clock.py",
    "probes/__init__.py",
    "probes/entry.py",
    "probes/catalog",
    "probes/engine",
)
"""The parts of the ``gtop`` package the agent imports (its import-linter contract)."""


def _stamp(value: int) -> bytes:
    """A bytecode header's 32-bit field (time or size), as CPython writes it."""
    return (value & 0xFFFFFFFF).to_bytes(4, "little")


class BootDir:
    """Creates ``path`` (which must not exist, 0700) and fills it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(mode=0o700)
        self.package = f"_gtop_{secrets.token_hex(8)}"
        """The agent's package name inside targets."""
        self._compiled: list[tuple[Path, Path, int, int]] = []
        self._copy_agent(path / self.package)
        self.bytecode = threading.Thread(
            target=self._copy_bytecode, name="gtop-agent-bytecode", daemon=True
        )
        """Copies the agent's bytecode beside its sources (see :meth:`_copy_agent`): off
        the attach's way (a file's creation took ~4 ms on a busy VM's /tmp)."""
        self.bytecode.start()
        self._write("sitecustomize.py", bootstrap.sitecustomize(self.package).encode())
        self.shim: Path | None = None
        """The CUPTI callback shim, where this machine runs the built one."""
        if platform.machine() == shim_blob.ARCH:
            self.shim = self._write("cupti_shim.so", shim_blob.shim_bytes(), 0o755)

    def _write(
        self, name: str, data: bytes, mode: int = 0o644, mtime_ns: int | None = None
    ) -> Path:
        path = self.path / name
        with os.fdopen(create_new(path, mode), "wb") as f:
            f.write(data)
            if mtime_ns is not None:
                os.utime(f.fileno(), ns=(mtime_ns, mtime_ns))
        return path

    def _copy_agent(self, dest: Path) -> None:
        """Copy the agent's sources, each with its modification time, so that the
        bytecode gtop's own interpreter compiled of them, copied beside them after, is
        valid for them: a target of that Python version imports the agent without
        compiling it (0.1-0.3 s of its GIL on this VM, a third of the agent's start);
        another version compiles as before."""
        src = Path(gtop.__file__).resolve().parent
        for part in AGENT_CODE:
            files = [src / part] if part.endswith(".py") else sorted((src / part).rglob("*.py"))
            for file in files:
                rel = dest.relative_to(self.path) / file.relative_to(src)
                (self.path / rel.parent).mkdir(mode=0o755, parents=True, exist_ok=True)
                data = file.read_bytes()
                mtime_ns = file.stat().st_mtime_ns
                self._write(str(rel), data, mtime_ns=mtime_ns)
                self._compiled.append((file, rel, len(data), mtime_ns))

    def _copy_bytecode(self) -> None:
        """Each copied source's compiled bytecode, when there is some compiled from
        exactly that source (its header's time and size), written whole under a temporary
        name and renamed into place (a target importing meanwhile sees all or nothing)."""
        for file, rel, size, mtime_ns in self._compiled:
            try:
                cached = Path(importlib.util.cache_from_source(str(file)))
                data = cached.read_bytes()
            except (OSError, NotImplementedError, ValueError):
                continue
            if data[:4] != importlib.util.MAGIC_NUMBER or data[4:8] != bytes(4):
                continue  # another interpreter's, or checked by hash: the target compiles
            if data[8:16] != _stamp(mtime_ns // 1_000_000_000) + _stamp(size):
                continue  # compiled from another version of the source
            target = Path(importlib.util.cache_from_source(str(self.path / rel)))
            try:
                target.parent.mkdir(mode=0o755, exist_ok=True)
                os.chmod(target.parent, 0o755)
                tmp = target.with_name(f"{target.name}.{secrets.token_hex(4)}.tmp")
                self._write(str(tmp.relative_to(self.path)), data)
                os.rename(tmp, target)
            except OSError:
                return  # the folder went (the link stopped)

    def launch_env(
        self, base: dict[str, str] | None, socket_path: str, mode: str, options: dict[str, Any]
    ) -> dict[str, str]:
        """``base`` (default: this environment) with the agent's settings, the boot folder
        first on ``PYTHONPATH``; when the mode traces NVTX ranges and ``base`` names no
        NVTX injection, the agent is asked to hand NVTX to its libcupti
        (:mod:`gtop.agent.nvtx`)."""
        env = dict(os.environ if base is None else base)
        if "marker" in kinds_for(mode) and nvtx.ENV not in env:
            env[nvtx.WANTED] = "1"
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(self.path) + (os.pathsep + old if old else "")
        env[bootstrap.ENV_SOCKET] = socket_path
        env[bootstrap.ENV_MODE] = mode
        env[bootstrap.ENV_OPTIONS] = json.dumps(options)
        return env

    def injection_code(self, socket_path: str, mode: str, options: dict[str, Any]) -> str:
        """Python source that, run inside a target, starts the agent (never raises).

        It runs in a namespace of its own: CPython < 3.14 runs queued code in
        ``__main__``'s, which must not gain names.
        """
        boot = str(self.path)
        body = (
            "import importlib, sys\n"
            f"sys.path.insert(0, {boot!r})\n"
            "try:\n"
            f"    agent = importlib.import_module({self.package + '.agent.runtime'!r})\n"
            "finally:\n"
            f"    sys.path.remove({boot!r})\n"
            f"agent.start({socket_path!r}, {mode!r}, **{options!r})\n"
        )
        return (
            "try:\n"
            f"    exec({body!r}, {{'__name__': '_gtop_attach'}})\n"
            "except BaseException:\n"
            "    pass\n"
        )

    def open_to_all(self) -> None:
        """Let any user read the folder (gtop as root attaching to another user); only
        gtop's user can still write it."""
        for folder, dirs, _ in os.walk(self.path):
            os.chmod(folder, 0o755)
            for d in dirs:
                os.chmod(os.path.join(folder, d), 0o755)
