"""The agent: runs inside the profiled process, traces CUDA activity, ships raw buffers.

Entry point: :func:`start` (called by the launch bootstrap or by injected code). It
returns at once; one daemon thread (``gtop-agent``) then connects to gtop's Unix socket,
waits until the process has initialised CUDA, enables CUPTI activity tracing and sends
every buffer CUPTI fills, untouched, until gtop asks it to detach, gtop goes away, or the
process exits. In every one of those cases tracing is switched off and the process runs
on at full speed; a later :func:`start` attaches again.

Rules (this is someone else's process): never print, never let an exception escape,
never block the target's threads, keep memory bounded (a fixed buffer pool), and report
problems to gtop as data (``STATE`` messages).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import socket
import sys
import threading
import time
from typing import Any

from . import wire
from .buffers import BufferPool, Completed, ShimPool, make_pool
from .cost import AgentCost
from .cupti import (
    CONCURRENT_KERNEL,
    ERROR_MULTIPLE_SUBSCRIBERS,
    KIND_BY_NAME,
    Cupti,
    CuptiError,
    load,
)
from .modes import KEPT_ON, KINDS, SAMPLED_KINDS, kinds_for
from .native import cuda_initialised, read_cstring
from .owned import FdLost, OwnedSocket
from .probe_control import ProbeControl
from .sampling import KERNEL_RECORD_BYTES, MIN_DUTY, SAMPLE_ABOVE, SamplingPolicy

_KEPT_ON = frozenset(KIND_BY_NAME[n] for n in KEPT_ON)
"""CUPTI kinds that stay enabled through kernel sampling's off phases."""
FLUSH_INTERVAL_S = 0.25
CUDA_POLL_S = 0.25
"""How often to look whether the process has initialised CUDA yet."""
STALE_S = 1.5
"""Without a buffer returned or requested for this long, the next flush is forced. A
forced flush returns the kernels still queued on a busy GPU without end times (counted
as incomplete, and as a drop in the recording), so it is the last resort: buffers come
back complete on their own once full, and the shim lends buffers sized to fill within
~0.5 s at the recent rate (a request means one has filled and will come back)."""
BUFFER_BYTES = 1 << 20
BUFFERS = 32
"""The pool: 32 MB in all. 1 MB buffers (~4800 kernel records) fill and come back
complete within a second from ~5k kernels/s up (a GPU-bound training step), where 4 MB
ones needed forced flushes; 32 of them hold ~0.5 s of records at 300k records/s."""
CLOCK_INTERVAL_S = 1.0
POLL_S = 0.1
"""How often the agent thread wakes (each wake takes the GIL from the target briefly)."""
SEND_TIMEOUT_S = 10.0
EXIT_JOIN_S = 3.0
MAX_REDIALS = 8
"""How often a process that keeps closing the agent's socket gets it back."""
DRAIN_S = 1.5
"""After the last buffer, how long to keep answering gtop's name requests."""

_lock = threading.Lock()
_fork_guard = threading.Lock()
"""Held while the agent's socket is made and recorded, and across a fork: a child forked
between the two kept a copy that :func:`_after_fork_in_child` could not know to close, so
gtop never saw the parent's end (a flaky test under load)."""
_session: Session | None = None
_redials = 0
_cupti: Cupti | None = None
_pool: ShimPool | BufferPool | None = None


LATE_GRAPH = (
    "graph: left off, every CUDA graph node traced as a kernel instead: gtop attached "
    "after CUDA started, and turning on graph-level tracing then (CUPTI's GRAPH_TRACE) "
    "crashed the process at its next launch of a graph made before (H200, CUDA 13.0)"
)
"""Why a session that began after CUDA's start never traces graphs one record per launch
(``benchmarks/attach_harm.py``: 4 of 4 graph decodes died with SIGSEGV in
``cudaGraphLaunch`` at the first attach with it on; 6 of 6 attaches without it, as per node
tracing, left them running)."""

OTHER_TOOL = (
    "another CUPTI tool (torch.profiler, Nsight, DCGM profiling) holds this process; "
    "stop it and attach again"
)


def _torch_profiler_active() -> bool:
    """torch.profiler running in this process (checked only if torch is imported already).

    Kineto registers CUPTI's buffer callbacks without always taking the subscriber slot,
    so the slot alone does not reveal it; taking over its callbacks would break it.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    checks = (
        lambda: torch._C._autograd._profiler_enabled(),
        lambda: torch.autograd.profiler._is_profiler_enabled,
    )
    for check in checks:
        try:
            if check():
                return True
        except BaseException:
            continue
    return False


class HostGone(Exception):
    """gtop closed the connection or stopped reading."""


class Refused(Exception):
    """Tracing cannot start; the message says why and what to do."""

    def __init__(self, state: str, message: str) -> None:
        super().__init__(message)
        self.state = state


def _cupti_and_pool(options: dict[str, Any]) -> tuple[Cupti, ShimPool | BufferPool]:
    """libcupti and the buffer pool, created once per process (CUPTI keeps pointers to
    the pool's callbacks, so they must live as long as the process)."""
    global _cupti, _pool
    if _cupti is None:
        _cupti = Cupti(*load())
    if _pool is None:
        _pool = make_pool(
            _cupti,
            options.get("shim"),
            options.get("buffer_bytes", BUFFER_BYTES),
            options.get("buffers", BUFFERS),
        )
    return _cupti, _pool


class Session(threading.Thread):
    """One connection to one gtop, from connect to teardown."""

    def __init__(self, path: str, kinds: tuple[str, ...], options: dict[str, Any]) -> None:
        super().__init__(name="gtop-agent", daemon=True)
        self.path = path
        self.kinds = kinds
        self.options = options
        self.stop_requested = threading.Event()
        self.exiting = False
        """Set when the process is exiting (rather than gtop asking to detach)."""
        self.wanted = kinds
        """The kinds asked for (``kinds`` keeps those CUPTI enabled while tracing is on;
        kernel sampling's off phases enable none)."""
        self.sampling: SamplingPolicy | None = None
        """Kernel sampling (None: every kernel is traced; see :mod:`gtop.agent.sampling`)."""
        self.kinds_changed = False
        """A kinds change arrived in an off phase: report it when tracing is on again."""
        self.owned: OwnedSocket | None = None
        self.connected = False
        self.tracing = False
        """Committed to starting CUPTI: at exit, its buffers must be delivered (worth a
        wait). Set under ``_phase``, so an exit either comes first or waits for them."""
        self._phase = threading.Lock()
        self.lost = False
        """The process closed our socket's descriptor: dial gtop again."""
        self.cupti: Cupti | None = None
        self.pool: ShimPool | BufferPool | None = None
        self.subscriber = None
        self.enabled: list[int] = []
        self.refused = ""
        """Kinds CUPTI would not enable, and why."""
        self.late = False
        """CUDA was initialised before this session began tracing (an attach): graphs
        may already be instantiated, so graph-level tracing stays off (:data:`LATE_GRAPH`)."""
        self.reader = wire.FrameReader()
        self.drained = False
        """gtop has answered the DRAIN frame (every name it needs is resolved)."""
        self.probes = ProbeControl()
        """PTX probes on Triton kernels, toggled by gtop's ``probe`` op."""
        self.cost = AgentCost(probes=self.probes)
        """What this session costs the process, sent with every clock sample."""
        self.buffers_sent = 0
        """Buffers shipped to gtop (none: a process that never launched GPU work)."""

    # --- lifecycle --------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._connect()
            self._trace()
        except HostGone:
            pass
        except Refused as exc:
            self._report(exc.state, str(exc))
        except BaseException as exc:  # fail open, but say why
            self._report("error", f"{type(exc).__name__}: {exc}")
        finally:
            _quietly(self.probes.close)
            self._stop_tracing()
            if self.exiting:
                self._report("exited", "the process is exiting")
            self._close()
            self._redial()

    def _connect(self) -> None:
        with _fork_guard:  # a fork cannot fall between the socket's birth and its record
            self.owned = OwnedSocket(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        sock = self.owned.sock
        sock.settimeout(SEND_TIMEOUT_S)
        try:
            sock.connect(self.path)
            _, uid = wire.peer_uid(sock)
        except OSError:
            raise HostGone from None
        if not wire.peer_allowed(uid, os.geteuid()):
            raise HostGone  # not our user: say nothing to it
        self.connected = True
        self._send(
            wire.json_frame(
                wire.HELLO,
                {
                    "pid": os.getpid(),
                    "ppid": os.getppid(),
                    "python": list(sys.version_info[:3]),
                    "executable": sys.executable,
                    "argv": list(sys.argv),
                    "kinds": list(self.kinds),
                },
            )
        )

    def _trace(self) -> None:
        self.late = cuda_initialised()
        if not self.late:
            self._report("waiting_cuda", "waiting for the process to initialise CUDA")
            while not cuda_initialised():
                if self.stop_requested.is_set():
                    return
                self._service(CUDA_POLL_S)
        with self._phase:  # committed to tracing, unless exit came first (see wake)
            if self.stop_requested.is_set():
                return
            self.tracing = True
        try:
            self.cupti, self.pool = _cupti_and_pool(self.options)
        except OSError as exc:
            raise Refused("no_cupti", str(exc)) from None
        cupti = self.cupti
        sizes = {k: s for k in range(1, 64) if (s := cupti.struct_size(k))}
        self._start_tracing()
        self._report(
            "tracing",
            self.refused,
            callbacks="c" if isinstance(self.pool, ShimPool) else "python",
            kinds=list(self.kinds),
            cupti_version=cupti.version(),
            cupti_path=cupti.path,
            record_sizes=sizes,
        )
        self.cost = AgentCost(self.pool, self.probes)
        sample_above = self.options.get("sample_above", SAMPLE_ABOVE)
        if sample_above:
            record_bytes = sizes.get(CONCURRENT_KERNEL) or KERNEL_RECORD_BYTES
            floor = float(self.options.get("min_duty", MIN_DUTY))
            self.sampling = SamplingPolicy(record_bytes, sample_above, time.monotonic_ns(), floor)
        self._send_clock(5)  # several samples first, for a quick first fit
        interval = self.options.get("flush_interval", FLUSH_INTERVAL_S)
        next_flush = last_buffer = time.monotonic()
        next_clock = next_flush + CLOCK_INTERVAL_S
        while not self.stop_requested.is_set():
            self._service(self._next_wake())
            woke = time.perf_counter_ns()
            released = -self._shipped_ns()  # ns in calls that let go of the GIL
            now = time.monotonic()
            if now >= next_flush:
                # Buffers that fill up come back by themselves: flush (a call into CUPTI
                # that takes its locks) only when none has come back for an interval.
                # A plain flush returns only buffers whose records are all complete; a
                # GPU that is never idle may keep one from completing, so after a while
                # without any buffer, force one out (its in-flight records come back
                # without end times, and are counted as incomplete).
                if now - last_buffer >= interval:
                    t_flush = time.perf_counter_ns()
                    quiet = now - max(last_buffer, self.pool.requested_ns / 1e9)
                    cupti.flush(forced=quiet >= STALE_S)  # ctypes: GIL let go
                    released += time.perf_counter_ns() - t_flush
                next_flush = now + interval
            if self._ship_returned():
                last_buffer = now
            self._sample()
            for probe_frame in self.probes.poll():
                self._send(probe_frame)
            if now >= next_clock:
                self._send_clock(1)
                self._send(wire.json_frame(wire.COST, self.cost.snapshot()))
                next_clock = now + CLOCK_INTERVAL_S
            self.cost.woke(time.perf_counter_ns() - woke, released + self._shipped_ns())

    def _next_wake(self) -> float:
        """Seconds until the agent loop should wake: a poll, or sooner for a switch."""
        if self.sampling is None:
            return POLL_S
        return min(POLL_S, max(0.0, (self.sampling.next_ns - time.monotonic_ns()) / 1e9))

    def _sample(self) -> None:
        """Switch tracing off or on when kernel sampling says so, and tell gtop.

        Off: every enabled kind but NVTX ranges (:data:`~gtop.agent.modes.KEPT_ON`) is
        disabled (``t_ns`` read before); on: the wanted kinds are enabled (``t_ns`` read
        after), so the microseconds between count as untraced.
        """
        policy = self.sampling
        switch = policy.step(time.monotonic_ns()) if policy is not None else None
        if switch is None:
            return
        t0 = time.perf_counter_ns()
        if not switch.on:
            t_ns = time.monotonic_ns()
            for kind in [k for k in self.enabled if k not in _KEPT_ON]:
                _quietly(self.cupti.disable, kind)
                self.enabled.remove(kind)
        else:
            if not policy.on:
                self._set_kinds(self.wanted)
            t_ns = time.monotonic_ns()
        took = time.perf_counter_ns() - t0
        policy.switched(switch.on, t_ns)
        frame = {"on": switch.on, "t_ns": t_ns, "rate": switch.rate, "duty": switch.duty}
        frame["switch_ns"] = took  # what the CUPTI calls took (a GPU run measures it)
        self._send(wire.json_frame(wire.COVERAGE, frame))
        if switch.on and self.kinds_changed:
            self.kinds_changed = False
            self._report("tracing", self.refused, kinds=list(self.kinds))

    def _shipped_ns(self) -> int:
        """ns the C shim has spent shipping (without the GIL) so far."""
        return self.pool.costs()[2] if isinstance(self.pool, ShimPool) else 0

    def _start_tracing(self) -> None:
        cupti, pool = self.cupti, self.pool
        if _torch_profiler_active():
            raise Refused("other_subscriber", OTHER_TOOL)
        try:
            self.subscriber = cupti.subscribe(pool.subscriber_cb)
        except CuptiError as exc:
            if exc.code == ERROR_MULTIPLE_SUBSCRIBERS:
                raise Refused("other_subscriber", OTHER_TOOL) from None
            raise
        cupti.register_callbacks(pool.requested_cb, pool.completed_cb)
        cupti.set_zeroed_buffers()
        cupti.system_thread_ids()
        cupti.latency_timestamps(bool(self.options.get("latency_timestamps", False)))
        self._set_kinds(self.wanted)

    def _set_kinds(self, names: tuple[str, ...]) -> None:
        """Trace exactly ``names``; a kind this CUPTI refuses is left out and reported.

        Kinds are enabled in :data:`~gtop.agent.modes.KINDS` order: graph-level tracing
        before the kernel records it keeps graph nodes out of.
        """
        late = self.late and "graph" in names
        names = tuple(n for n in names if not (late and n == "graph"))
        wanted = {KIND_BY_NAME[n]: n for n in sorted(names, key=KINDS.index)}
        for kind in [k for k in self.enabled if k not in wanted]:
            _quietly(self.cupti.disable, kind)
            self.enabled.remove(kind)
        refused = []
        for kind, name in wanted.items():
            if kind in self.enabled:
                continue
            try:
                self.cupti.enable(kind)
                self.enabled.append(kind)
            except CuptiError as exc:
                refused.append(f"{name}: {exc}")
        self.kinds = tuple(n for k, n in wanted.items() if k in self.enabled)
        self.refused = "; ".join([LATE_GRAPH] * late + refused)

    def _stop_tracing(self) -> None:
        """Disable everything and give every buffer back; each step may fail alone."""
        cupti, pool = self.cupti, self.pool
        if cupti is None or self.subscriber is None:
            return
        for kind in list(self.enabled):
            _quietly(cupti.disable, kind)
        self.enabled.clear()
        _quietly(cupti.flush, True)
        items = []
        if self.connected:
            try:
                self._ship_returned()
            except BaseException:
                self.connected = False
        if not self.connected and isinstance(pool, ShimPool):
            pool.ship(-1, 0)  # lend them again, unsent
        elif not self.connected:
            items = pool.completed()
        late_drops = cupti.dropped(None, 0)  # drops after the last returned buffer
        if late_drops:
            items.append(Completed(0, 0, late_drops))
        if self.connected:
            try:
                self._ship(items)
                items = []
                if self.buffers_sent:  # else no name can be pending: exit at once
                    self._drain()
            except BaseException:
                self.connected = False
        for item in items:
            pool.release(item)
        self._leave_cupti()
        pool.trim()

    def _leave_cupti(self) -> None:
        """Give up the subscriber slot; every kind is off already. CUPTI stays loaded.

        Never ``cuptiFinalize``: on an H200 (CUDA 13.0) it corrupted a launch-bound
        target's heap in 3 of 12 detaches when called from this thread, and in 2 of 10
        when called, as CUPTI's dynamic-detach sample does, at the exit of one of the
        target's own CUDA calls; unsubscribing alone, 0 of 21
        (``benchmarks/detach_stress.py``, RESULTS.md "Detaching").
        """
        _quietly(self.cupti.unsubscribe, self.subscriber)
        self.subscriber = None

    def _drain(self) -> None:
        """Answer gtop's name requests for the last buffers before leaving.

        Kernel names first seen in the final buffers (kernels first launched late, or
        from a thread whose buffer CUPTI returns only at the end) would otherwise never
        be resolved: their pointers are only readable in this process, which may be
        exiting. Bounded by :data:`DRAIN_S`; an older gtop that does not answer costs
        exactly that.
        """
        self._send(wire.json_frame(wire.DRAIN, {}))
        deadline = time.monotonic() + DRAIN_S
        while not self.drained and (left := deadline - time.monotonic()) > 0:
            self._service(min(POLL_S, left))

    def _close(self) -> None:
        if self.owned is not None:
            _quietly(self.owned.close)  # only if the descriptor is still ours
        self.connected = False
        global _session
        with _lock:
            if _session is self:
                _session = None

    def _redial(self) -> None:
        """After the process closed our socket: connect again, as a new session."""
        global _session, _redials
        if not self.lost or self.exiting or self.stop_requested.is_set():
            return
        with _lock:
            if _session is None and _redials < MAX_REDIALS:
                _redials += 1
                _session = Session(self.path, self.wanted, self.options)
                _session.start()

    def wake(self) -> None:
        """Make the thread see the stop request now, not at its next poll (at exit, when
        there is nothing to deliver: ``python -c pass`` should not wait for a poll)."""
        with self._phase:
            if self.owned is not None and not self.tracing:
                self.owned.shutdown_read()

    # --- I/O --------------------------------------------------------------------------

    def _send(self, *parts: bytes | memoryview) -> None:
        if not self.connected:
            raise HostGone
        try:
            self.owned.fileno()
            for part in parts:
                self.owned.sock.sendall(part)
        except OSError as exc:
            self._lose(exc)

    def _lose(self, exc: OSError) -> None:
        """The link failed: gtop went away, or the process took our descriptor."""
        self.connected = False
        self.lost = isinstance(exc, FdLost)
        raise HostGone from None

    def _report(self, state: str, message: str, **extra: Any) -> None:
        if self.connected:
            _quietly(
                self._send,
                wire.json_frame(wire.STATE, {"state": state, "message": message, **extra}),
            )

    def _ship_returned(self) -> int:
        """Send every buffer CUPTI has returned and lend it again; how many were sent.

        With the C pool the whole batch goes out in one ctypes call that holds no GIL
        (the target's threads lose the GIL once per wake-up, not ~6 times per buffer).
        """
        if not isinstance(self.pool, ShimPool):
            items = self.pool.completed()
            self._ship(items)
            self.buffers_sent += len(items)
            return len(items)
        if not self.connected:
            raise HostGone
        try:
            fd = self.owned.fileno()
        except FdLost as exc:
            self._lose(exc)
        sent, nbytes = self.pool.ship(fd, SEND_TIMEOUT_S)
        if sent < 0:
            self.connected = False
            raise HostGone
        self.buffers_sent += sent
        if self.sampling is not None:
            self.sampling.shipped(nbytes)
        return sent

    def _ship(self, items: list[Completed]) -> None:
        """Send returned buffers as they are, then lend them to CUPTI again."""
        for i, item in enumerate(items):
            try:
                head = wire.BUFFER_HEAD.pack(item.dropped, self.pool.declined)
                size = len(head) + item.valid
                payload = self.pool.view(item) if item.valid else b""
                self._send(wire.HEADER.pack(wire.BUFFER, 0, size), head, payload)
                if self.sampling is not None:
                    self.sampling.shipped(item.valid)
            except HostGone:
                for rest in items[i:]:
                    self.pool.release(rest)
                raise
            self.pool.release(item)

    def _send_clock(self, count: int) -> None:
        samples = []
        for _ in range(count):
            best = None
            for _ in range(3):
                before = time.monotonic_ns()
                ts = self.cupti.timestamp()
                after = time.monotonic_ns()
                if best is None or after - before < best[2] - best[0]:
                    best = (before, ts, after)
            samples.append(best)
        self._send(wire.json_frame(wire.CLOCK, {"samples": samples}))

    def _service(self, timeout: float) -> None:
        """Wait up to ``timeout`` for control messages from gtop and act on them."""
        try:
            # poll, not select: a big process may hold file descriptors above 1024
            poller = select.poll()
            poller.register(self.owned.fileno(), select.POLLIN)
            ready = poller.poll(timeout * 1000)
            data = self.owned.sock.recv(1 << 16) if ready and self.owned.mine() else None
        except OSError as exc:
            self._lose(exc)
        if data == b"" and self.exiting and not self.tracing:
            return  # woken for exit (see wake)
        if data == b"":
            raise HostGone
        if data:
            for kind, payload in self.reader.feed(data):
                if kind == wire.CONTROL:
                    self._control(wire.decode_json(payload))

    def _control(self, msg: dict[str, Any]) -> None:
        op = msg.get("op")
        if op == "detach":
            self.stop_requested.set()
        elif op == "drained":
            self.drained = True
        elif op == "resolve":
            names = {str(p): read_cstring(int(p)) for p in msg.get("pointers", [])}
            self._send(wire.json_frame(wire.NAMES, {"names": names}))
        elif op == "probe":
            self._send(wire.json_frame(wire.PROBE_STATE, self.probes.control(msg)))
        elif op == "kinds" and self.subscriber is not None:
            self.wanted = kinds_for(",".join(msg.get("kinds", ())))
            if self.sampling is not None and not self.sampling.on:
                self.kinds_changed = True  # enabled at the next on phase
                return
            self._set_kinds(self.wanted)
            self._report("tracing", self.refused, kinds=list(self.kinds))


def _quietly(fn: Any, *args: Any) -> None:
    with contextlib.suppress(BaseException):
        fn(*args)


def start(path: str, mode: str = "default", **options: Any) -> bool:
    """Attach to the gtop listening at ``path``; return at once. Never raises.

    Args:
        path: gtop's Unix socket.
        mode: ``"default"`` or ``"full"``, or a comma-separated list of kinds
            (``kernel,memcpy,runtime``); see :mod:`gtop.agent.modes`.
        options: ``buffer_bytes``, ``buffers``, ``flush_interval``, ``latency_timestamps``,
            ``min_duty`` (kernel sampling's floor),
            ``sample_above`` (records/s above which kernels are traced in a duty cycle,
            :mod:`gtop.agent.sampling`; 0: trace every kernel, as ``full`` mode and any
            kind list with API calls or CUPTI overhead always do).

    Returns:
        False when an agent session is already running in this process.
    """
    global _session
    try:
        kinds = kinds_for(mode)
        if not (SAMPLED_KINDS | KEPT_ON).issuperset(kinds):  # API calls asked for: every one
            options = {**options, "sample_above": 0}
        with _lock:
            if _session is not None and _session.is_alive():
                return False
            _session = Session(path, kinds, options)
            _session.start()
        return True
    except BaseException:
        return False


def stop(timeout: float = EXIT_JOIN_S) -> None:
    """At exit: stop tracing, deliver what is buffered, tell gtop, and disconnect."""
    try:
        session = _session
        if session is not None and session.is_alive():
            session.exiting = True
            session.stop_requested.set()
            session.wake()
            session.join(timeout)
    except BaseException:
        pass


def _before_fork() -> None:
    _fork_guard.acquire()


def _after_fork_in_parent() -> None:
    _fork_guard.release()


def _after_fork_in_child() -> None:
    """A forked child inherits none of the agent's threads: forget the session, and
    close the child's copy of its socket (else gtop would not see the parent leave while
    the child lives), only if the child has not already closed or reused it."""
    global _session, _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    _fork_guard.release()  # held by this (the forking) thread since _before_fork
    session, _session = _session, None
    if session is not None and session.owned is not None:
        _quietly(session.owned.close)


atexit.register(stop)
os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)
