"""The live source: collectors on worker threads → hub → the UI's subscription."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gtop.collectors import session_collectors
from gtop.collectors.agent.attach import AttachError, attach, hold_with_agent
from gtop.collectors.agent.link import AgentLink
from gtop.collectors.base import Collector, SessionCollector, SessionSetup
from gtop.collectors.host import check_pid, family
from gtop.collectors.threads.tier import publish_thread_name
from gtop.collectors.threads.tiers import HostThreads
from gtop.core.hub import Hub, Subscription, Update
from gtop.core.source import Controls
from gtop.core.status import Status

if TYPE_CHECKING:
    from gtop.collectors.agent.attach import PendingAttach
    from gtop.collectors.agent.folder import LinkFolder
    from gtop.collectors.nvml import NvmlCollector
    from gtop.recordings.recorder import Recorder

FROM_EXEC: tuple[type[SessionCollector], ...] = (HostThreads,)
"""Those of the session's collectors (:func:`~gtop.collectors.session_collectors`, opened
at :meth:`LiveSource.start`) that a launched command is held for before its ``exec``
(:mod:`gtop.collectors.gate`): they follow its pid from its first instruction, since the
report's startup phase needs the target's stacks from its first line. The others, and
NVML, open beside or after the launch."""


ATTACH_JOIN_S = 0.5
"""At stop, how long to let a background attach finish saying why it failed."""


class LiveSource:
    """Samples this machine's GPUs (NVML) and processes on worker threads.

    Args:
        pid: the focused target (its descendants are followed too), or None for all.
        interval_s: sampling period of every collector.
        host_tier: how the target's threads are traced (``auto``, ``bpf``, ``perf``,
            ``proc``; ``off`` for not at all).
        require_gpu: raise :class:`~gtop.collectors.nvml.NvmlUnavailable` instead of
            carrying on without NVML. Without it NVML opens on a thread of its own, beside
            a launch (``nvmlInit`` is slow on some machines); what needs it (:attr:`meta`,
            :meth:`start`) waits for it.

    Raises:
        TargetGone: ``pid`` does not exist.
        NvmlUnavailable: no usable GPU and ``require_gpu``.
    """

    live = True

    def __init__(
        self,
        pid: int | None,
        interval_s: float,
        *,
        require_gpu: bool,
        host_tier: str = "auto",
        agent_options: dict[str, Any] | None = None,
        py_rate_hz: float = 100.0,
        py_idle: bool = True,
    ) -> None:
        self.pid = pid
        self.agent_options = agent_options or {}
        """Options for the in-process agent (:func:`gtop.agent.runtime.start`)."""
        self.host_tier = host_tier
        self.py_rate_hz, self.py_idle = py_rate_hz, py_idle
        self.interval_s = interval_s
        self.hub = Hub()
        self.collectors: list[Collector] = []
        """Every collector running: NVML and the registered ones (from :meth:`start`), and
        the agent link (from a launch or attach)."""
        self.nvml_error: str | None = None
        self.target = self._describe_target(pid)
        self.title = f"pid {pid}" if pid else socket.gethostname()
        self.nvml: NvmlCollector | None = None
        self._nvml_opening: threading.Thread | None = None
        if require_gpu:
            self._open_nvml(require_gpu=True)
        else:
            self._nvml_opening = threading.Thread(
                target=self._open_nvml, name="gtop-nvml-open", daemon=True
            )
            self._nvml_opening.start()
        self._sub = self.hub.subscribe()
        self._held_sub: Subscription | None = None
        self._held_since = 0
        """Taken before a launched command runs, for :meth:`start_recording` (or dropped
        at :meth:`start`): a recording started just after the launch misses nothing."""
        self._opened: set[type[SessionCollector]] = set()
        self.recorder: Recorder | None = None
        self.link: AgentLink | None = None
        self.agent_error: str | None = None
        """Why the in-process agent is not there (one line), when it is not."""
        self._attaching: threading.Thread | None = None
        """A background attach (:meth:`attach_agent_in_background`), if one was started."""
        self._stopped = False
        self._starting: threading.Thread | None = None
        self._start_error: BaseException | None = None
        self.stop_problems: list[str] = []
        """What :meth:`stop` gave up waiting for (one line each)."""
        self.process: subprocess.Popen | None = None

    def _open_nvml(self, require_gpu: bool = False) -> None:
        from gtop.collectors.nvml import NvmlCollector, NvmlUnavailable

        try:
            self.nvml = NvmlCollector(self.hub, self.interval_s)
        except NvmlUnavailable as exc:
            if require_gpu:
                raise
            self.nvml_error = str(exc)
        except Exception as exc:  # on the opening thread: said, not raised there
            if require_gpu:
                raise
            self.nvml_error = f"NVML failed to open: {exc}"

    def _nvml_opened(self) -> NvmlCollector | None:
        """NVML's collector (None without it), once its opening thread is done."""
        if self._nvml_opening is not None:
            self._nvml_opening.join()
            self._nvml_opening = None
        return self.nvml

    @property
    def controls(self) -> Controls:
        """This session takes probe and recording requests (:class:`Controls`)."""
        return self

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

    def _agent_link(self, mode: str, folder: LinkFolder | None = None) -> AgentLink:
        if self.link is None:
            self.link = AgentLink(self.hub, mode, self.agent_options, folder).start()
            self.collectors.append(self.link)
        return self.link

    def can_probe(self) -> bool:
        return self.link is not None

    def set_probe(
        self, pid: int, kernel: str, probe: str, every: int = 0, on: bool = True
    ) -> str | None:
        if self.link is None:
            return "no agent in this session: start the program with gtop run, or attach"
        return self.link.set_probe(pid, kernel, probe, every, on)

    def set_kinds(self, pid: int, kinds: list[str]) -> str | None:
        if self.link is None:
            return "no agent in this session: start the program with gtop run, or attach"
        self.link.set_kinds(kinds, pid)
        return None

    def launch(
        self, cmd: list[str], agent_mode: str = "default", agent: bool = True, **popen: Any
    ) -> subprocess.Popen:
        """Start ``cmd`` with the agent loaded (unless ``agent`` is False), and focus on it.

        The agent's socket listens, and the collectors of :data:`FROM_EXEC` follow the
        command's pid, before it runs (it is held before its exec meanwhile).

        Raises:
            AttachError: the command cannot be started (one line).
        """
        link = self._agent_link(agent_mode) if agent else None
        held = hold_with_agent(cmd, link, hold=self.host_tier != "off", **popen)
        self.pid = held.pid
        self._held_since = time.monotonic_ns()
        self._held_sub = self.hub.subscribe()
        try:
            self.collectors[:0] = self._open(FROM_EXEC)
        except BaseException:
            held.cancel()
            raise
        self.process = held.release()
        if self.host_tier != "off":  # the exec renamed the main thread: say so now
            publish_thread_name(self.hub, self.pid, self.pid, time.monotonic_ns())
        if link is not None:
            self._follow(link)
        self.target = {"pid": self.pid, "cmdline": list(cmd), "launched": True}
        self.title = f"pid {self.pid}"
        return self.process

    def attach_agent(
        self,
        agent_mode: str = "default",
        timeout: float | None = None,
        pending: PendingAttach | None = None,
    ) -> str | None:
        """Inject the agent into the focused process; the one-line reason if it fails.

        gtop carries on without the agent (NVML and host data only) when it fails.
        ``timeout``: how long to wait for the agent to report (default
        :data:`~gtop.collectors.agent.attach.CONNECT_TIMEOUT_S`); ``pending``: the
        attach begun earlier for the focused process, in this session's agent mode and
        options (:class:`~gtop.collectors.agent.attach.PendingAttach`).
        """
        if self.pid is None:
            raise RuntimeError("no target to attach to")
        link = self._agent_link(agent_mode, pending.folder if pending is not None else None)
        wait = {} if timeout is None else {"timeout": timeout}
        try:
            attach(self.pid, link, pending=pending, **wait)
        except AttachError as exc:
            self.agent_error = str(exc)
        if not self._stopped:
            self._follow(link)
        return self.agent_error

    def attach_agent_in_background(
        self, agent_mode: str, timeout: float, pending: PendingAttach | None = None
    ) -> threading.Thread:
        """:meth:`attach_agent` on a thread of its own, so that collection (and a
        recording's clock) runs while the agent gets in; its error lands in
        :attr:`agent_error`, and :meth:`stop` ends its wait."""
        self._agent_link(agent_mode, pending.folder if pending is not None else None)
        thread = threading.Thread(
            target=self.attach_agent,
            args=(agent_mode, timeout, pending),
            name="gtop-attach",
            daemon=True,
        )
        thread.start()
        self._attaching = thread
        return thread

    def _follow(self, link: AgentLink) -> None:
        """Send the agent into the target's descendants that use CUDA, as they appear."""
        self._nvml_opened()  # no GPU: nothing to follow
        self.collectors += self._open(session_collectors("agent"), agent=link)

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

    @property
    def meta(self) -> dict[str, Any]:
        """What a recording stores about this session (once NVML has opened: it names
        the GPUs, or why there are none)."""
        self._nvml_opened()
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

    def _open(
        self, classes: Iterable[type[SessionCollector]], agent: AgentLink | None = None
    ) -> list[Collector]:
        """Start those of ``classes`` not started yet that have something to watch here."""
        nvml = self.nvml
        setup = SessionSetup(
            self.hub,
            self.interval_s,
            self.pid,
            self.host_tier,
            self._watched_pids,
            self.py_rate_hz,
            self.py_idle,
            agent,
            (lambda: nvml.pids) if nvml is not None else None,
        )
        opened: list[Collector] = []
        for cls in classes:
            if cls in self._opened:
                continue
            self._opened.add(cls)
            collector = cls.for_session(setup)
            if collector is not None:
                collector.start()
                opened.append(collector)
        return opened

    def _drop_held_sub(self) -> None:
        if self._held_sub is not None:
            self.hub.unsubscribe(self._held_sub)
            self._held_sub = None

    def start(self) -> None:
        """Start NVML and every registered collector not running yet (the agent link, and
        what a launch opened, already run)."""
        nvml = self._nvml_opened()
        if nvml is not None:
            nvml.start()
        self.collectors[:0] = ([nvml] if nvml is not None else []) + self._open(
            session_collectors()
        )
        self._drop_held_sub()

    def start_in_background(self) -> None:
        """:meth:`start` on a thread of its own, so that a recording's clock
        (``--duration``) runs while the host-thread tier loads (seconds on a busy machine);
        :meth:`wait_started` and :meth:`stop` wait for it."""

        def run() -> None:
            try:
                self.start()
            except BaseException as exc:  # raised again by wait_started
                self._start_error = exc

        self._starting = threading.Thread(target=run, name="gtop-start", daemon=True)
        self._starting.start()

    def wait_started(self) -> None:
        """Wait for :meth:`start_in_background`'s start, and raise what it raised."""
        if self._starting is not None:
            self._starting.join()
        error, self._start_error = self._start_error, None
        if error is not None:
            raise error

    def stop(self, wait_s: float | None = None) -> None:
        """Stop collecting: the agent detaches (the target runs on), recording is finalised.

        The agent detaches while the collectors stop. ``wait_s``: how long the agent's
        detach and the host-thread tier's last poll may take (None: their own bounds; see
        :meth:`~gtop.collectors.threads.tier.ThreadCollector.stop`).
        """
        self._stopped = True
        until_ns = time.monotonic_ns()  # the recording ends here (see Recorder.until_ns)
        if self.recorder is not None:
            self.recorder.until_ns = until_ns  # also for what it drains while we stop
        if self._starting is not None:
            self._starting.join()  # what it started is stopped below
        if self._start_error is not None:
            self.stop_problems.append(f"collection failed to start: {self._start_error}")
        detaching = None
        if self.link is not None:
            detach_s = {} if wait_s is None else {"timeout": wait_s}
            detaching = threading.Thread(
                target=self.link.stop, kwargs=detach_s, name="gtop-detach", daemon=True
            )
            detaching.start()
        if self._attaching is not None and self._attaching.is_alive():
            self._attaching.join(ATTACH_JOIN_S)  # it says why it failed, or it is stuck:
            if self._attaching.is_alive():
                self.agent_error = f"pid {self.pid}: collection stopped while injecting the agent"
        for collector in reversed(self.collectors):
            if isinstance(collector, HostThreads):
                collector.stop(wait_s)
                if why := collector.abandoned():
                    self.stop_problems.append(why)
            elif collector is not self.link:
                collector.stop()
        if detaching is not None:
            detaching.join()  # the agent's last buffers are in before the recording ends
        self._drop_held_sub()
        self.stop_recording(until_ns)

    def exit_status(self) -> int | None:
        """A launched command's exit status as a shell gives it (128+N when signal N
        killed it), or None while it runs or when gtop launched none."""
        if self.process is None or self.process.poll() is None:
            return None
        code = self.process.returncode
        return 128 - code if code < 0 else code

    def poll(self) -> Update:
        return self._sub.poll()

    def now_ns(self) -> int:
        return time.monotonic_ns()

    def drops(self) -> dict[str, int]:
        out = dict(self.hub.source_drops)
        for name, n in self._sub.drops().items():
            out[name] = out.get(name, 0) + n
        return out

    def statuses(self) -> list[Status]:
        out = [Status("nvml", ok=False, detail=self.nvml_error)] if self.nvml_error else []
        if self.agent_error:
            out.append(Status("agent", ok=False, detail=self.agent_error))
        for collector in self.collectors:
            out.extend(collector.statuses())
        return out

    # --- recording ----------------------------------------------------------------------

    def start_recording(self, path: Path, *, overwrite: bool = False) -> Recorder:
        """Record everything from now on to ``path`` (entities known so far included).

        Raises:
            FileExistsError, OSError: the file cannot be created.
        """
        from gtop.recordings.recorder import Recorder

        if self.recorder is not None:
            raise RuntimeError("already recording")
        sub, self._held_sub = self._held_sub, None
        if sub is None:  # from now on, also while NVML's open is waited for (the meta)
            sub, since = self.hub.subscribe(), time.monotonic_ns()
        else:
            since = self._held_since
        self.recorder = Recorder(
            self.hub, path, self.meta, overwrite=overwrite, sub=sub, since_ns=since
        ).start()
        return self.recorder

    def stop_recording(self, until_ns: int | None = None) -> Path | None:
        """Finalise the recording (``until_ns``: its end, see
        :meth:`~gtop.recordings.recorder.Recorder.stop`); its path, None without one."""
        if self.recorder is None:
            return None
        recorder, self.recorder = self.recorder, None
        final: dict[str, Any] = {"agent_error": self.agent_error}
        for collector in self.collectors:
            summary = getattr(collector, "python_sampler", lambda: None)()
            if summary is not None:
                final["python_sampler"] = summary
        status = self.exit_status()
        if status is not None and self.target is not None:
            final["target"] = {**self.target, "exit_status": status}
        return recorder.stop(final, until_ns)


def default_recording_path(pid: int | None) -> Path:
    """``gtop-<host>[-<pid>]-<YYYYmmdd-HHMMSS>.gtop`` in the current directory."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    who = f"-{pid}" if pid else ""
    return Path(os.getcwd()) / f"gtop-{socket.gethostname()}{who}-{stamp}.gtop"
