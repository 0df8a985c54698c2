"""The live source: collectors on worker threads → hub → the UI's subscription."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from gtop.collectors.agent_link import REFUSALS, AgentLink
from gtop.collectors.attach import AttachError, attach, launch_with_agent
from gtop.collectors.base import CollectorStatus, PollingCollector
from gtop.collectors.host import HostCollector, check_pid, family
from gtop.collectors.nvml import NvmlCollector, NvmlUnavailable
from gtop.pipeline.hub import Hub, Update
from gtop.recordings.recorder import Recorder


class LiveSource:
    """Samples this machine's GPUs (NVML) and processes (psutil) on worker threads.

    Args:
        pid: the focused target (its descendants are followed too), or None for all.
        interval_s: sampling period of every collector.
        require_gpu: raise :class:`NvmlUnavailable` instead of carrying on without NVML.

    Raises:
        TargetGone: ``pid`` does not exist.
        NvmlUnavailable: no usable GPU and ``require_gpu``.
    """

    live = True

    def __init__(self, pid: int | None, interval_s: float, *, require_gpu: bool) -> None:
        self.pid = pid
        self.interval_s = interval_s
        self.hub = Hub()
        self.collectors: list[PollingCollector] = []
        self.nvml_error: str | None = None
        self.target = self._describe_target(pid)
        self.title = f"pid {pid}" if pid else socket.gethostname()
        self.nvml: NvmlCollector | None = None
        try:
            self.nvml = NvmlCollector(self.hub, interval_s)
            self.collectors.append(self.nvml)
        except NvmlUnavailable as exc:
            if require_gpu:
                raise
            self.nvml_error = str(exc)
        self.collectors.append(HostCollector(self.hub, interval_s, self._watched_pids))
        self._sub = self.hub.subscribe()
        self.recorder: Recorder | None = None
        self.link: AgentLink | None = None
        self.agent_error: str | None = None
        """Why the in-process agent is not there (one line), when it is not."""
        self.process: subprocess.Popen | None = None
        self.meta: dict[str, Any] = self._meta()

    @staticmethod
    def _describe_target(pid: int | None) -> dict[str, Any] | None:
        if pid is None:
            return None
        proc = check_pid(pid)
        try:
            cmdline = proc.cmdline()
        except Exception:
            cmdline = None
        return {"pid": pid, "cmdline": cmdline}

    # --- the in-process agent (CUPTI) ---------------------------------------------------

    def _agent_link(self, mode: str) -> AgentLink:
        if self.link is None:
            self.link = AgentLink(self.hub, mode).start()
        return self.link

    def launch(self, cmd: list[str], agent_mode: str = "default", **popen: Any) -> subprocess.Popen:
        """Start ``cmd`` with the agent loaded, and focus on it.

        Raises:
            AttachError: the command cannot be started (one line).
        """
        self.process = launch_with_agent(cmd, self._agent_link(agent_mode), **popen)
        self.pid = self.process.pid
        self.target = {"pid": self.pid, "cmdline": list(cmd), "launched": True}
        self.title = f"pid {self.pid}"
        self.meta = self._meta()
        return self.process

    def attach_agent(self, agent_mode: str = "default") -> str | None:
        """Inject the agent into the focused process; the one-line reason if it fails.

        gtop carries on without the agent (NVML and host data only) when it fails.
        """
        if self.pid is None:
            raise RuntimeError("no target to attach to")
        try:
            attach(self.pid, self._agent_link(agent_mode))
        except AttachError as exc:
            self.agent_error = str(exc)
        self.meta["agent_error"] = self.agent_error
        return self.agent_error

    def target_alive(self) -> bool:
        """Whether the focused process still runs (True when there is none)."""
        if self.process is not None:
            return self.process.poll() is None
        if self.pid is None:
            return True
        return bool(family(self.pid))

    def _watched_pids(self) -> set[int]:
        pids = set(self.nvml.pids) if self.nvml is not None else set()
        if self.pid is not None:
            pids.update(family(self.pid))
            pids.add(self.pid)  # keeps reporting it once after it exits
        return pids

    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "host": socket.gethostname(),
            "platform": platform.platform(),
            "target": self.target,
            "interval_s": self.interval_s,
            "nvml_error": self.nvml_error,
            "agent_error": self.agent_error,
        }
        if self.nvml is not None:
            meta["devices"] = self.nvml.devices
            meta.update(self.nvml.system)
        return meta

    def start(self) -> None:
        for collector in self.collectors:
            collector.start()

    def stop(self) -> None:
        """Stop collecting: the agent detaches (the target runs on), recording is finalised."""
        if self.link is not None:
            self.link.stop()
        self.stop_recording()
        for collector in self.collectors:
            collector.stop()

    def poll(self) -> Update:
        return self._sub.poll()

    def now_ns(self) -> int:
        return time.monotonic_ns()

    def drops(self) -> dict[str, int]:
        out = dict(self.hub.source_drops)
        for name, n in self._sub.drops().items():
            out[name] = out.get(name, 0) + n
        return out

    def statuses(self) -> list[CollectorStatus]:
        out = [c.status for c in self.collectors]
        if self.agent_error:
            out.append(CollectorStatus("agent", ok=False, detail=self.agent_error))
        if self.link is not None:
            for pid, status in self.link.status().items():
                ok = status.state not in REFUSALS
                out.append(CollectorStatus(f"agent {pid}", ok=ok, detail=status.summary()))
        return out

    # --- recording ----------------------------------------------------------------------

    def start_recording(self, path: str | Path, *, overwrite: bool = False) -> Recorder:
        """Record everything from now on to ``path`` (entities known so far included).

        Raises:
            FileExistsError, OSError: the file cannot be created.
        """
        if self.recorder is not None:
            raise RuntimeError("already recording")
        self.recorder = Recorder(self.hub, path, self.meta, overwrite=overwrite).start()
        return self.recorder

    def stop_recording(self) -> Path | None:
        if self.recorder is None:
            return None
        recorder, self.recorder = self.recorder, None
        return recorder.stop()


def default_recording_path(pid: int | None) -> Path:
    """``gtop-<host>[-<pid>]-<YYYYmmdd-HHMMSS>.gtop`` in the current directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    who = f"-{pid}" if pid else ""
    return Path(os.getcwd()) / f"gtop-{socket.gethostname()}{who}-{stamp}.gtop"
