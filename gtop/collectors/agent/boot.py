"""The agent's boot folder: what a launched or attached Python process imports the agent
from (``gtop`` itself through a symlink, a ``sitecustomize`` for launches, the built C
shim), and the two ways in: the environment for a launch, the code for an injection."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

import gtop
from gtop.agent import bootstrap, shim_blob


class BootDir:
    """Creates ``path`` (which must not exist) and fills it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()
        (path / "gtop").symlink_to(Path(gtop.__file__).resolve().parent)
        (path / "sitecustomize.py").write_text(bootstrap.SITECUSTOMIZE)
        self.shim: Path | None = None
        """The CUPTI callback shim, where this machine runs the built one."""
        if platform.machine() == shim_blob.ARCH:
            self.shim = path / "cupti_shim.so"
            self.shim.write_bytes(shim_blob.shim_bytes())

    def launch_env(
        self, base: dict[str, str] | None, socket_path: str, mode: str, options: dict[str, Any]
    ) -> dict[str, str]:
        """``base`` (default: this environment) with the agent's settings, the boot folder
        first on ``PYTHONPATH``."""
        env = dict(os.environ if base is None else base)
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = str(self.path) + (os.pathsep + old if old else "")
        env[bootstrap.ENV_SOCKET] = socket_path
        env[bootstrap.ENV_MODE] = mode
        env[bootstrap.ENV_OPTIONS] = json.dumps(options)
        return env

    def injection_code(self, socket_path: str, mode: str, options: dict[str, Any]) -> str:
        """Python source that, run inside a target, starts the agent (never raises)."""
        boot = str(self.path)
        return (
            "try:\n"
            "    import sys\n"
            f"    sys.path.insert(0, {boot!r})\n"
            "    try:\n"
            "        import gtop.agent.runtime as _gtop_agent\n"
            "    finally:\n"
            f"        sys.path.remove({boot!r})\n"
            f"    _gtop_agent.start({socket_path!r}, {mode!r}, **{options!r})\n"
            "except BaseException:\n"
            "    pass\n"
        )

    def grant(self, uid: int) -> None:
        """Let processes of ``uid`` read the folder (gtop as root attaching to a user)."""
        for p in (self.path, *self.path.glob("*.py"), *self.path.glob("*.so")):
            os.chown(p, uid, -1, follow_symlinks=False)
