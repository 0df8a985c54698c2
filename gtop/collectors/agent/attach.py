"""Getting the agent into a process: at launch, or into a running CPython.

* :func:`launch_with_agent` starts a command with the agent loaded at startup (no change
  to the command; see :mod:`gtop.agent.bootstrap`); :func:`hold_with_agent` holds it
  before its exec until collectors follow its pid (:mod:`gtop.collectors.gate`).
* :func:`attach` injects it into a running CPython: ``sys.remote_exec`` (PEP 768) on
  3.14+, the same thing done through ptrace on 3.10-3.13
  (:mod:`gtop.collectors.agent.safepoint`). Either way the start code runs on the
  target's main thread at its next safe point, holding the GIL; never on a thread
  stopped at an arbitrary instruction.

When the agent cannot get in, :class:`AttachError` carries one line naming the cause and
the fix; gtop then carries on without the agent. Nothing here kills the target or runs
anything on a thread stopped mid-way: the start code only starts the agent's thread.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gtop.agent import nvtx
from gtop.agent.modes import kinds_for
from gtop.collectors.agent.folder import LinkFolder
from gtop.collectors.agent.injector import Injector
from gtop.collectors.agent.safepoint import InjectError
from gtop.collectors.agent.status import REFUSALS, AgentStatus
from gtop.collectors.agent.target import AttachError, Target
from gtop.collectors.gate import Held
from gtop.core.files import create_unique

if TYPE_CHECKING:
    from gtop.collectors.agent.link import AgentLink

CAP_SYS_PTRACE = 19
CONNECT_TIMEOUT_S = 10.0


class Launched(Held):
    """A command started by :func:`hold_with_agent`: held before its exec, or running."""

    def release(self) -> subprocess.Popen:
        """Let the command run (see :meth:`Held.release`).

        Raises:
            AttachError: the command cannot be started.
        """
        try:
            return super().release()
        except OSError as exc:
            raise _cannot_start(self.cmd, exc) from None


def _cannot_start(cmd: list[str], exc: OSError) -> AttachError:
    return AttachError(f"cannot start {cmd[0]!r}: {exc.strerror}; check the command")


def launch_with_agent(cmd: list[str], link: AgentLink | None, **popen: object) -> subprocess.Popen:
    """Start ``cmd`` with the agent loaded in every Python process it runs (``link``
    None: without it).

    Raises:
        AttachError: ``cmd`` cannot be started.
    """
    return hold_with_agent(cmd, link, hold=False, **popen).process


def hold_with_agent(
    cmd: list[str], link: AgentLink | None, hold: bool = True, **popen: object
) -> Launched:
    """As :func:`launch_with_agent`, held before its exec until :meth:`Launched.release`
    (``hold`` False: already running).

    Raises:
        AttachError: ``cmd`` cannot be started (here, or from ``release`` when held).
    """
    env = popen.pop("env", None)
    if link is not None:
        env = link.launch_env(env)  # type: ignore[arg-type]
    try:
        return Launched(cmd, hold, env=env, **popen)
    except OSError as exc:
        raise _cannot_start(cmd, exc) from None


def attach(
    pid: int,
    link: AgentLink,
    timeout: float = CONNECT_TIMEOUT_S,
    pending: PendingAttach | None = None,
) -> AgentStatus:
    """Inject the agent into running CPython ``pid`` and wait until it reports in.

    ``pending``: the attach begun earlier for ``pid`` into ``link``'s folder (else it is
    done here).

    Returns:
        the agent's first status (``waiting_cuda`` or ``tracing``).

    Raises:
        AttachError: the agent could not get in, or refused to trace (one line each).
    """
    if pending is None:
        queue_agent(pid, link.folder, Injector(pid))
    else:
        pending.wait()
    status = link.wait(pid, ("waiting_cuda", "tracing", *REFUSALS), timeout)
    if status is None and link.stopped:
        raise AttachError(
            f"pid {pid}: the agent had not started when collection stopped (its main thread "
            "had not returned to Python: one long C call, or stopped?)"
        )
    if status is None:
        raise AttachError(
            f"pid {pid}: the agent is queued but did not start within {timeout:.0f} s: the "
            "main thread has not returned to Python (one long C call, or stopped?); it starts "
            "when it does, while gtop runs"
        )
    if status.state in REFUSALS:
        raise AttachError(f"pid {pid}: {status.message}")
    return status


def queue_agent(
    pid: int, folder: LinkFolder, injector: Injector, cancelled: threading.Event | None = None
) -> bool:
    """Queue the agent's start code (dialling ``folder``'s socket) for running CPython
    ``pid``'s next safe point, through ``injector`` (started for ``pid``; closed here),
    unless ``cancelled`` is set before the code is sent; whether it was queued.

    Raises:
        AttachError: the agent cannot get in (one line: cause, then fix).
    """
    try:
        try:
            target = injector.target()
        except InjectError as exc:
            raise _injection_failed(pid, str(exc)) from None
        check_ptrace(target)
        if os.geteuid() == 0 and target.uid != 0:
            folder.grant(target.uid)
        if cancelled is not None and cancelled.is_set():
            return False
        inject(target, folder, injector)
        return True
    finally:
        injector.close()


class PendingAttach:
    """An attach begun before the session exists (``gtop --pid``: before its heavy
    imports). On a thread of its own, the link's folder is made while the injector child
    reads the target, and the agent is queued as soon as the child has reported; the
    caller's thread goes on at once. The agent dials the folder's socket and waits in its
    backlog until the session's link (made with :attr:`folder`) runs; :func:`attach`
    waits for the queueing, then for the agent.

    Raises:
        ValueError: unknown mode or kind.
    """

    def __init__(self, pid: int, mode: str, options: dict[str, Any] | None = None) -> None:
        kinds_for(mode)  # a bad mode fails here, in the caller
        self.pid = pid
        self._injector = Injector(pid)  # first: its interpreter starts meanwhile
        self._folder: LinkFolder | None = None
        self._made = threading.Event()
        self._error: AttachError | None = None
        self._cancelled = threading.Event()
        self.queued = False
        """The agent's start code is queued in the target."""
        self._thread = threading.Thread(
            target=self._queue, args=(mode, options), name="gtop-queue", daemon=True
        )
        self._thread.start()

    @property
    def folder(self) -> LinkFolder | None:
        """The link's folder, once made (None: it could not be; :meth:`wait` says why)."""
        self._made.wait()
        return self._folder

    def _queue(self, mode: str, options: dict[str, Any] | None) -> None:
        try:
            try:
                self._folder = LinkFolder(mode, options)
            finally:
                self._made.set()
            self.queued = queue_agent(self.pid, self._folder, self._injector, self._cancelled)
        except AttachError as exc:
            self._error = exc
        except OSError as exc:  # the folder, its grant, the injector's start
            self._error = AttachError(f"attach to pid {self.pid} failed: {exc}")
        finally:
            self._injector.close()  # already, unless the folder failed

    def wait(self) -> None:
        """Wait until the agent is queued.

        Raises:
            AttachError: it could not be (one line).
        """
        self._thread.join()
        if self._error is not None:
            raise self._error

    def cancel(self) -> None:
        """Unused (the session did not start): nothing is queued that was not already,
        and the folder goes (an agent queued already finds nobody there, and stops)."""
        self._cancelled.set()
        self._thread.join()
        if self._folder is not None:
            self._folder.listener.close()
            self._folder.remove()


def check_ptrace(target: Target) -> None:
    """Fail early, with the fix, where the kernel would refuse ptrace.

    Raises:
        AttachError: different user without root, or Yama forbids it.
    """
    euid = os.geteuid()
    privileged = euid == 0 or has_cap_sys_ptrace()
    if target.uid != euid and not privileged:
        raise AttachError(
            f"pid {target.pid} belongs to uid {target.uid}, gtop runs as uid {euid}: "
            "run gtop as that user or as root"
        )
    scope = yama_scope()
    if scope == 3:
        raise AttachError(
            "ptrace is disabled on this machine (kernel.yama.ptrace_scope=3, only a reboot "
            "resets it): start the program with `gtop run -- CMD` instead"
        )
    if scope in (1, 2) and not privileged:
        raise AttachError(
            f"ptrace of pid {target.pid} refused (kernel.yama.ptrace_scope={scope}): run gtop "
            "as root, or `sudo sysctl kernel.yama.ptrace_scope=0`, or use `gtop run -- CMD`"
        )


def yama_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return 0


def has_cap_sys_ptrace() -> bool:
    m = re.search(r"^CapEff:\s+([0-9a-f]+)", Path("/proc/self/status").read_text(), re.M)
    return bool(m and int(m[1], 16) >> CAP_SYS_PTRACE & 1)


def inject(target: Target, folder: LinkFolder, injector: Injector | None = None) -> None:
    """Queue the agent's start code (dialling ``folder``) for ``target``'s next safe point
    (through ``injector``, one started earlier for it, if given).

    Raises:
        AttachError: the kernel refused, or the target's memory map is unreadable.
    """
    code = folder.injection_code()
    if target.python >= (3, 14):
        remote_exec(target, str(folder.boot.path), code)
        return
    error = queue_at_safe_point(target.pid, code, injector)
    if error is not None:
        raise _injection_failed(target.pid, error)


def _injection_failed(pid: int, error: str) -> AttachError:
    """The injector's one line, with the fix where the kernel refused ptrace."""
    if "ermission" in error or "not permitted" in error:
        return AttachError(
            f"ptrace of pid {pid} refused ({error}): run gtop as root or with "
            "CAP_SYS_PTRACE (containers: --cap-add SYS_PTRACE), or use `gtop run -- CMD`"
        )
    return AttachError(f"injection into pid {pid} failed: {error}")


def queue_at_safe_point(pid: int, code: str, injector: Injector | None = None) -> str | None:
    """Queue ``code`` for CPython ``pid``'s next safe point (3.10-3.13, see
    :mod:`gtop.collectors.agent.safepoint`); None, or one line saying why not.
    ``injector``: a child started earlier for ``pid`` (else one is started here)."""
    injector = injector or Injector(pid)
    try:
        return injector.queue(code)
    finally:
        injector.close()


def remote_exec(target: Target, folder: str, code: str) -> None:
    """Run ``code`` in ``target`` through ``sys.remote_exec`` (PEP 768), called from
    gtop's own interpreter, which must be the target's version; never by running the
    target's executable, which its owner controls.

    Raises:
        AttachError: gtop runs another Python, or the kernel refused.
    """
    mine = sys.version_info[:2]
    if mine != target.python or not hasattr(sys, "remote_exec"):
        v = f"{target.python[0]}.{target.python[1]}"
        raise AttachError(
            f"pid {target.pid} runs Python {v}: attaching to it needs gtop itself on "
            f"Python {v} (sys.remote_exec; gtop runs {mine[0]}.{mine[1]}), or start the "
            "program with `gtop run -- CMD`"
        )
    path, fd = create_unique(folder, "attach-", ".py", 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(code)
    try:
        sys.remote_exec(target.pid, str(path))  # type: ignore[attr-defined]
    except (OSError, RuntimeError) as exc:
        raise AttachError(f"sys.remote_exec into pid {target.pid} failed: {exc}") from None


def doctor() -> list[tuple[str, bool, str]]:
    """``(check, ok, detail)`` lines for ``gtop doctor``: can the agent get in here?
    The attach check attaches for real, to a Python child it starts."""
    from gtop.agent.cupti import candidate_paths

    lines = [("attach", *_attach_works())]
    scope = yama_scope()
    privileged = os.geteuid() == 0 or has_cap_sys_ptrace()
    ok = scope == 0 or (scope in (1, 2) and privileged)
    lines.append(("ptrace", ok, f"kernel.yama.ptrace_scope={scope}, privileged={privileged}"))
    found = [p for p in candidate_paths() if Path(p).is_file()]
    lines.append(
        (
            "libcupti",
            bool(found),
            found[0] if found else "not found here (targets using torch bring their own)",
        )
    )
    lines.append(nvtx_line())
    return lines


def nvtx_line() -> tuple[str, bool, str]:
    """``gtop doctor``'s line on what a launched command's NVTX is handed to (a Python
    of gtop's own environment; another interpreter chooses from its own wheels)."""
    if nvtx.ENV in os.environ:
        return "nvtx", True, f"{nvtx.ENV}={os.environ[nvtx.ENV]!r} (set here: kept)"
    path, why = nvtx.choose(os.environ)
    if path is None:
        return "nvtx", False, f"a launched command's NVTX ranges are not recorded: {why}"
    return "nvtx", True, f"a launched command gets {nvtx.ENV}={path}"


PROBE_CHILD = "import time\nwhile True:\n    time.sleep(0.005)\n"
PROBE_CODE = "import os\nos.write(1, b'attached\\n')\n"


def _attach_works() -> tuple[bool, str]:
    """Queue code into a Python child of this interpreter and see it run."""
    if sys.version_info >= (3, 14):
        return True, "sys.remote_exec (PEP 768) for Python 3.14+ targets"
    with subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", PROBE_CHILD], stdout=subprocess.PIPE
    ) as child:
        try:
            time.sleep(0.05)  # past its interpreter's start-up
            error = queue_at_safe_point(child.pid, PROBE_CODE)
            if error is not None:
                return False, f"{error}; `gtop run -- CMD` still works"
            ready, _, _ = select.select([child.stdout], [], [], 5.0)
            if not ready or child.stdout.readline() != b"attached\n":
                return False, "queued code did not run in a test child within 5 s"
        finally:
            child.kill()
    return True, "queues the agent for a Python 3.10-3.13 target's next safe point (tried)"
