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

import contextlib
import os
import re
import select
import subprocess
import sys
import time
from dataclasses import astuple, dataclass
from pathlib import Path

from gtop.agent import nvtx
from gtop.collectors.agent.link import AgentLink
from gtop.collectors.agent.status import REFUSALS, AgentStatus
from gtop.collectors.gate import Held
from gtop.core.files import create_unique

CAP_SYS_PTRACE = 19
CONNECT_TIMEOUT_S = 10.0
MIN_PYTHON = (3, 10)
INJECT_TIMEOUT_S = 10.0
INJECTOR_EXIT_S = 2.0
"""How long an injector child closed unused (or done) may take to exit before it is killed."""
INJECTOR = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from gtop.collectors.agent.safepoint import main; main()"
)
"""Run by gtop's own interpreter in isolated mode (``-I``: no working folder, no
``PYTHON*`` variables on its path; ``-S``: no site), importing gtop from where this gtop
lives."""


class AttachError(Exception):
    """The agent could not get in; ``str()`` is one line: cause, then fix."""


@dataclass(frozen=True)
class Target:
    pid: int
    uid: int
    python: tuple[int, int]


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


def attach(pid: int, link: AgentLink, timeout: float = CONNECT_TIMEOUT_S) -> AgentStatus:
    """Inject the agent into running CPython ``pid`` and wait until it reports in.

    Returns:
        the agent's first status (``waiting_cuda`` or ``tracing``).

    Raises:
        AttachError: the agent could not get in, or refused to trace (one line each).
    """
    injector = Injector()  # its interpreter starts while the target is looked at
    try:
        target = inspect(pid)
        check_ptrace(target)
        if os.geteuid() == 0 and target.uid != 0:
            link.grant(target.uid)
        inject(target, link, injector)
    finally:
        injector.close()
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


def inspect(pid: int) -> Target:
    """Who ``pid`` is and which Python it runs.

    Raises:
        AttachError: no such process, or it is not CPython 3.10+.
    """
    from gtop.collectors.agent.pyversion import python_version  # pyelftools: not at a launch

    proc = Path(f"/proc/{pid}")
    try:
        uid = int(re.search(r"^Uid:\s+\d+\s+(\d+)", (proc / "status").read_text(), re.M)[1])
    except (OSError, TypeError):
        raise AttachError(f"pid {pid} does not exist; check the pid (ps -p {pid})") from None
    try:
        maps = (proc / "maps").read_text()
    except PermissionError:
        raise AttachError(
            f"pid {pid} belongs to uid {uid}: cannot read it as uid {os.geteuid()}; "
            "run gtop as that user or as root"
        ) from None
    except OSError:
        raise AttachError(f"pid {pid} exited; nothing to attach to") from None
    why: list[str] = []
    version = python_version(pid, maps, why)
    if version is None and _exiting(proc):
        raise AttachError(f"pid {pid} exited; nothing to attach to")
    if version is None:
        name = (proc / "comm").read_text().strip()
        raise AttachError(
            f"pid {pid} ({name}) is not a Python process: the agent needs CPython "
            f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}+ ({'; '.join(why)}); showing NVML and host "
            "data only"
        )
    if version < MIN_PYTHON:
        raise AttachError(
            f"pid {pid} runs Python {version[0]}.{version[1]}: the agent needs "
            f"{MIN_PYTHON[0]}.{MIN_PYTHON[1]}+; use gtop run with a newer Python"
        )
    return Target(pid, uid, version)


def _exiting(proc: Path) -> bool:
    """Whether the process is gone or on its way out (a zombie, or dead: its executable's
    link is gone before /proc lets it go, so its Python cannot be read)."""
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


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


def inject(target: Target, link: AgentLink, injector: Injector | None = None) -> None:
    """Queue the agent's start code for ``target``'s next safe point (through
    ``injector``, one started earlier, if given).

    Raises:
        AttachError: the kernel refused, or the target's memory map is unreadable.
    """
    code = link.injection_code()
    if target.python >= (3, 14):
        remote_exec(target, link.boot_dir, code)
        return
    error = queue_at_safe_point(target.pid, code, injector)
    if error is None:
        return
    if "ermission" in error or "not permitted" in error:
        raise AttachError(
            f"ptrace of pid {target.pid} refused ({error}): run gtop as root or with "
            "CAP_SYS_PTRACE (containers: --cap-add SYS_PTRACE), or use `gtop run -- CMD`"
        )
    raise AttachError(f"injection into pid {target.pid} failed: {error}")


class Injector:
    """The child that queues code through ptrace (:func:`gtop.collectors.agent.safepoint.main`),
    started before it is needed: it waits for its pid, addresses and code on stdin, so
    its interpreter's start-up (0.1-0.5 s on a busy machine) overlaps the symbol lookup.

    A child, so that a tracee that will not stop cannot hang gtop: killing the child
    detaches ptrace. Closed unused, it reads nothing and exits without touching anything.
    """

    def __init__(self) -> None:
        package_parent = str(Path(__file__).resolve().parents[3])
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", INJECTOR, package_parent],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def queue(self, pid: int, addresses: list[str], code: str) -> str | None:
        """Queue ``code`` for ``pid`` (see :func:`queue_at_safe_point`); the child ends."""
        try:
            _, err = self.proc.communicate(
                f"{pid} {' '.join(addresses)}\n{code}", timeout=INJECT_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            self.close()
            return f"did not finish in {INJECT_TIMEOUT_S:.0f} s; is pid {pid} stopped?"
        if self.proc.returncode == 0:
            return None
        return (err.strip().splitlines() or ["unknown error"])[-1].removeprefix("gtop: ")

    def close(self) -> None:
        """End the child (unused: it reads end-of-file and exits; stuck: it is killed)."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                self.proc.wait(INJECTOR_EXIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.close()  # type: ignore[union-attr]


def queue_at_safe_point(pid: int, code: str, injector: Injector | None = None) -> str | None:
    """Queue ``code`` for CPython ``pid``'s next safe point (3.10-3.13, see
    :mod:`gtop.collectors.agent.safepoint`); None, or one line saying why not.
    ``injector``: a child started earlier (else one is started here)."""
    from gtop.collectors.agent.procsyms import find_symbols  # pyelftools: not at a launch
    from gtop.collectors.agent.safepoint import InjectError

    injector = injector or Injector()
    try:
        try:
            addresses = [f"{a:x}" for a in astuple(find_symbols(pid))]
        except InjectError as exc:
            return str(exc)
        return injector.queue(pid, addresses, code)
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
