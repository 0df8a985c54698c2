"""The agent link's private folder: the socket agents dial and the boot folder they import
the agent from. Light to import (no numpy), so that ``gtop --pid`` makes it, and queues
the agent, before its own heavy imports; the :class:`~.link.AgentLink` made after adopts
it. An agent that dials before the link's thread runs waits in the socket's backlog.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from typing import Any

from gtop.agent import bootstrap, tmpdirs
from gtop.agent.modes import kinds_for
from gtop.agent.sampling import SAMPLE_ABOVE
from gtop.collectors.agent.boot import BootDir

TMP_PREFIX = "gtop-agent-"
"""The link's folder: ``/tmp/gtop-agent-<pid>-*`` (socket, boot folder)."""
BACKLOG = 16


class LinkFolder:
    """Makes the folder (0700), its socket (0600, listening) and its boot folder.

    Args:
        mode: agent tracing mode (``default``, ``full`` or a comma list of kinds).
        options: agent options (see :func:`gtop.agent.runtime.start`), over defaults
            taken from ``$GTOP_AGENT_OPTIONS`` (JSON), e.g. ``{"buffers": 64}``;
            ``sample_above`` defaults to :data:`~gtop.agent.sampling.SAMPLE_ABOVE`.

    Raises:
        ValueError: unknown mode or kind.
    """

    def __init__(self, mode: str = "default", options: dict[str, Any] | None = None) -> None:
        kinds_for(mode)  # fail here, in gtop, on a bad mode
        self.mode = mode
        defaults = json.loads(os.environ.get(bootstrap.ENV_OPTIONS) or "{}")
        self.options = {**defaults, **(options or {})}
        self.options.setdefault("sample_above", SAMPLE_ABOVE)  # the agent: 0 in full mode
        self.dir = tmpdirs.make(TMP_PREFIX)
        self.path = str(self.dir / "agent.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.listener.bind(self.path)
        os.chmod(self.path, 0o600)
        self.listener.listen(BACKLOG)
        self.boot = BootDir(self.dir / "py")
        if self.boot.shim is not None:
            self.options.setdefault("shim", str(self.boot.shim))

    def launch_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment that makes every Python process it reaches load the agent."""
        return self.boot.launch_env(base, self.path, self.mode, self.options)

    def injection_code(self) -> str:
        """Python source that, run inside a target, starts the agent (never raises)."""
        return self.boot.injection_code(self.path, self.mode, self.options)

    def grant(self, uid: int) -> None:
        """Let processes of ``uid`` reach the link (gtop as root attaching to a user).

        The folders stay gtop's: that user may read the agent's code and connect to the
        socket (handed over, 0600), but cannot write anything gtop later writes or reads.
        """
        self.boot.open_to_all()
        os.chmod(self.dir, 0o711)
        os.chown(self.path, uid, -1, follow_symlinks=False)

    def remove(self) -> None:
        """Delete the folder (the listener is closed by its owner first): an agent that
        dials it now finds nobody, and stops."""
        self.boot.bytecode.join()  # nothing is written into the folder once it goes
        shutil.rmtree(self.dir, ignore_errors=True)
