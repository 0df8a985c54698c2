"""Queue Python code for a running CPython's next safe point (3.10-3.13, x86-64 Linux).

What CPython 3.14's ``sys.remote_exec`` (PEP 768) does, for the versions without it: the
code runs on the target's main thread, between two bytecodes, holding the GIL, exactly
where CPython runs its own signal handlers. Nothing else runs inside the target.

How: ptrace stops the main thread wherever it is (it may be inside ``malloc``, the dynamic
loader or a CUDA call, holding their locks), and makes it call three functions that take
none of those locks, then resumes it exactly as it was:

1. libc's ``mmap``: one private page;
2. libc's ``mprotect``, after gtop wrote into the page a 20-byte function
   ``int run(void *code) { PyRun_SimpleString(code); return 0; }`` and the code itself:
   the page becomes read-only and executable;
3. ``Py_AddPendingCall(run, code)``, which CPython documents as callable from any thread
   without the GIL (a signal handler's job): it appends to the pending-call queue.

The thread is never asked to load a library, allocate from the heap or take the GIL
while stopped: ptrace injection that calls ``dlopen`` there (hypno, pyinjector) runs the
loader and ``malloc`` on a thread that may hold their locks, and froze about one target
in 15-26 on our machines (RESULTS.md, "Attaching"). The page stays mapped (4 KiB per
attach: the queued call returns into it).

A main thread that never returns to the interpreter (stuck in one long C call) never
runs the code; the caller bounds its wait and gives up (see
:func:`gtop.collectors.agent.attach.attach`).

Run in a child of gtop (:mod:`gtop.collectors.agent.injector`), so that a stuck tracee
cannot hang gtop: killing the child detaches ptrace. The child finds the functions'
addresses itself (:mod:`gtop.collectors.agent.procsyms`) before gtop hands it the code.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import time
from dataclasses import dataclass

PTRACE_POKEDATA = 5
PTRACE_CONT = 7
PTRACE_GETREGS = 12
PTRACE_SETREGS = 13
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_EVENT_STOP = 128
WALL = 0x40000000
PROT_READ, PROT_WRITE, PROT_EXEC = 1, 2, 4
MAP_PRIVATE, MAP_ANONYMOUS = 0x02, 0x20
PAGE = 4096
RED_ZONE = 128
STEP_TIMEOUT_S = 2.0
"""How long one stop or one call may take before the injection gives up."""
MAX_SIGNALS = 64
"""Signals passed through to the target during one injection before giving up."""


class InjectError(Exception):
    """The code could not be queued; ``str()`` is one line."""


class StepTimeout(InjectError):
    """The thread did not stop, or a call did not return, within :data:`STEP_TIMEOUT_S`."""


class Regs(ctypes.Structure):
    """``struct user_regs_struct`` (x86-64)."""

    _fields_ = [
        (name, ctypes.c_ulonglong)
        for name in (
            *("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax"),
            *("rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss"),
            *("fs_base", "gs_base", "ds", "es", "fs", "gs"),
        )
    ]


ARG_REGS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")


def run_stub(py_run_simple_string: int) -> bytes:
    """x86-64 code of ``int run(void *code) { PyRun_SimpleString(code); return 0; }``.

    Returning 0 whatever the code did matters: a pending call that returns -1 makes the
    interpreter raise in the target's own code.
    """
    return (
        b"\x48\x83\xec\x08"  # sub rsp, 8          (the callee gets an aligned stack)
        + b"\x48\xb8"  # movabs rax, PyRun_SimpleString
        + py_run_simple_string.to_bytes(8, "little")
        + b"\xff\xd0"  # call rax              (rdi: the code, as received)
        + b"\x31\xc0"  # xor eax, eax
        + b"\x48\x83\xc4\x08"  # add rsp, 8
        + b"\xc3"  # ret
    )


@dataclass(frozen=True)
class Symbols:
    """Addresses, in the target, of the functions the injection calls."""

    mmap: int
    mprotect: int
    add_pending_call: int
    run_simple_string: int


class Tracee:
    """The target's main thread under ptrace (``PTRACE_SEIZE``: no signal is sent)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.libc.ptrace.restype = ctypes.c_long
        self.saved = Regs()
        self._ptrace(PTRACE_SEIZE, 0, 0)

    def _ptrace(self, request: int, addr: int, data: int | ctypes.c_void_p) -> int:
        ctypes.set_errno(0)
        res = self.libc.ptrace(request, self.pid, addr, data)
        err = ctypes.get_errno()
        if res == -1 and err:
            raise OSError(err, os.strerror(err))
        return res

    def stop(self) -> None:
        """Stop the thread where it is and save its registers."""
        self.stop_only()
        self._ptrace(PTRACE_GETREGS, 0, ctypes.addressof(self.saved))

    def stop_only(self) -> None:
        self._ptrace(PTRACE_INTERRUPT, 0, 0)
        self._wait(lambda status: (status >> 16) == PTRACE_EVENT_STOP)

    def _wait(self, wanted) -> int:
        """Wait (bounded) for a stop that ``wanted(status)`` accepts; other signals are
        handed to the target as they came."""
        passed = 0
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG | WALL)
            if pid == 0:
                if time.monotonic() > deadline:
                    raise StepTimeout(
                        f"pid {self.pid} did not stop within {STEP_TIMEOUT_S:.0f} s "
                        "(uninterruptible I/O?); nothing was changed"
                    )
                time.sleep(0.0005)
                continue
            if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                raise InjectError(f"pid {self.pid} exited")
            if wanted(status):
                return status
            sig = os.WSTOPSIG(status) if os.WIFSTOPPED(status) else 0
            passed += 1
            if passed > MAX_SIGNALS:
                raise InjectError(f"pid {self.pid}: too many signals while injecting")
            # a group-stop or event stop passes no signal; a signal-delivery stop does
            deliver = sig if (status >> 16) == 0 and sig != signal.SIGTRAP else 0
            self._ptrace(PTRACE_CONT, 0, deliver)

    def call(self, fn: int, *args: int) -> int:
        """Call ``fn(*args)`` on the stopped thread, below its stack's red zone; returns
        ``rax``. The call returns to address 0, which stops the thread with SIGSEGV."""
        regs = Regs.from_buffer_copy(self.saved)
        for name, value in zip(ARG_REGS, args, strict=False):
            setattr(regs, name, value & 0xFFFFFFFFFFFFFFFF)
        sp = ((self.saved.rsp - RED_ZONE - 256) & ~0xF) - 8
        self._ptrace(PTRACE_POKEDATA, sp, 0)  # the return address
        regs.rsp = sp
        regs.rip = fn
        regs.rax = 0
        regs.orig_rax = 0xFFFFFFFFFFFFFFFF  # not in a syscall: no restart on resume
        regs.eflags &= ~0x400  # the ABI's direction flag: clear at a call
        self._ptrace(PTRACE_SETREGS, 0, ctypes.addressof(regs))
        self._ptrace(PTRACE_CONT, 0, 0)
        try:
            self._wait(self._returned)
        except StepTimeout:
            # Stuck (a lock held elsewhere): stop it again, so that resume() abandons the
            # call; left running, it would return to address 0 and crash the target.
            self.stop_only()
            raise InjectError(f"pid {self.pid}: a call did not return; abandoned") from None
        out = Regs()
        self._ptrace(PTRACE_GETREGS, 0, ctypes.addressof(out))
        return out.rax

    def _returned(self, status: int) -> bool:
        if not os.WIFSTOPPED(status) or os.WSTOPSIG(status) != signal.SIGSEGV:
            return False
        regs = Regs()
        self._ptrace(PTRACE_GETREGS, 0, ctypes.addressof(regs))
        if regs.rip != 0:
            raise InjectError(
                f"pid {self.pid}: a call crashed during injection (SIGSEGV at rip "
                f"{regs.rip:#x}, rsp {regs.rsp:#x}); nothing was queued"
            )
        return True

    def write(self, address: int, data: bytes) -> None:
        fd = os.open(f"/proc/{self.pid}/mem", os.O_WRONLY | os.O_CLOEXEC)
        try:
            if os.pwrite(fd, data, address) != len(data):
                raise InjectError(f"pid {self.pid}: short write into its memory")
        finally:
            os.close(fd)

    def resume(self) -> None:
        """Put the saved registers back (an interrupted syscall restarts) and detach."""
        self._ptrace(PTRACE_SETREGS, 0, ctypes.addressof(self.saved))
        self._ptrace(PTRACE_DETACH, 0, 0)


def _traced_by(pid: int) -> int:
    """The pid tracing ``pid`` (``TracerPid`` in its status), 0 for none."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


PF_EXITING = 0x4
"""``/proc/PID/stat`` flags: the process is exiting (ptrace then refuses it with EPERM)."""


def _exiting(pid: int) -> bool:
    """``pid`` is gone, a zombie, or on its way out."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True
    return fields[0] in ("Z", "X") or bool(int(fields[6]) & PF_EXITING)


def queue_code(pid: int, syms: Symbols, code: bytes) -> None:
    """Queue ``code`` (Python source) to run on ``pid``'s main thread at its next safe
    point (``syms``: from :func:`gtop.collectors.agent.procsyms.find_symbols`).

    Raises:
        InjectError: nothing was queued (one line: why).
    """
    stub = run_stub(syms.run_simple_string)
    payload = stub + code + b"\0"
    size = (len(payload) + PAGE - 1) // PAGE * PAGE
    try:
        tracee = Tracee(pid)
    except OSError as exc:
        if exc.errno == errno.ESRCH or (exc.errno == errno.EPERM and _exiting(pid)):
            raise InjectError(f"pid {pid} exited") from None
        if exc.errno == errno.EPERM and _traced_by(pid):
            raise InjectError(
                f"pid {pid} is already traced by pid {_traced_by(pid)} (a debugger, strace, "
                "py-spy?); try again once it detaches"
            ) from None
        raise InjectError(f"ptrace of pid {pid} refused: {exc.strerror}") from None
    stopped = False
    try:
        tracee.stop()
        stopped = True
        page = tracee.call(syms.mmap, 0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0)  # fmt: skip
        if page >= 1 << 63 or page == 0:  # MAP_FAILED or an errno
            raise InjectError(f"pid {pid}: mmap in the target failed")
        tracee.write(page, payload)
        if tracee.call(syms.mprotect, page, size, PROT_READ | PROT_EXEC) != 0:
            raise InjectError(f"pid {pid}: mprotect in the target failed (W^X policy?)")
        if tracee.call(syms.add_pending_call, page, page + len(stub)) != 0:
            raise InjectError(f"pid {pid}: its pending-call queue is full; try again")
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            raise InjectError(f"pid {pid} exited") from None
        raise InjectError(f"ptrace of pid {pid} failed: {exc.strerror}") from None
    finally:
        if stopped:
            with contextlib.suppress(OSError):  # it exited meanwhile
                tracee.resume()
