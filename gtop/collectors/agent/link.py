"""gtop's end of the in-process agent: accept agents, decode their buffers, publish.

:class:`AgentLink` listens on a Unix socket in a private folder (0700, socket 0600),
accepts agents of the same user (or any, when gtop runs as root) checked by
``SO_PEERCRED``, and runs one daemon thread that decodes every raw CUPTI buffer into the
``kernel``, ``memcpy``, ``memset``, ``api``, ``sync``, ``marker`` and ``overhead``
streams of a :class:`~gtop.core.hub.Hub`. It publishes entities:

* ``kernel_name`` / ``marker_name`` (key: name id): ``{"name", "pid"}``;
* ``clock_fit`` (key ``cupti:<pid>``): see :mod:`gtop.cupti.clock`;
* ``probe_launch`` (key ``<pid>:<launch>``) and ``clock_fit`` (key
  ``globaltimer:<pid>``) with the ``probe_*`` streams for each probed launch an agent
  ships (assembled by :mod:`gtop.collectors.agent.probed`), and ``probe_control`` (key
  ``<pid>:<probe>:<kernel>``): ``{"kernel", "probe", "on", "ok", "message", "pid"}``, the
  answer to :meth:`AgentLink.set_probe`;
* ``agent`` (key: pid): ``{"state", "message", "kinds", "cupti_version", "sampling",
  ...}`` on every state change. States: ``connected``, ``waiting_cuda``, ``tracing``,
  ``detached``, ``exited``, and the refusals ``no_cupti``, ``other_subscriber``,
  ``error``. ``sampling`` is ``{"duty", "rate"}`` while the agent traces in a duty cycle
  (:mod:`gtop.agent.sampling`), else None; ``nvtx_off`` the NVTX ranges/s at which gtop
  stopped tracing the process's ranges (above :data:`~gtop.agent.sampling.RANGES_ABOVE`),
  else None;
* ``agent_cost`` (key: pid), about once a second while tracing: what the agent has cost
  its process so far (:func:`gtop.analysis.report.agent_cost.cost_value`).

And the ``untraced`` stream: each off phase of kernel sampling as a row ``(t_off, -1,
pid)`` when it begins (open) and ``(t_off, t_on, pid)`` when it ends (closed, also when
the connection ends while off).

Several agents may connect (a launched program's Python children each bring one).
Accounting per agent: records received + records CUPTI dropped (``Hub.source_drops``
under ``"cupti"``) = records CUPTI produced.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import selectors
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gtop.agent import wire
from gtop.agent.modes import kinds_for
from gtop.agent.sampling import RANGES_ABOVE
from gtop.collectors.agent.folder import LinkFolder
from gtop.collectors.agent.status import REFUSALS, AgentStatus
from gtop.core.hub import Entity, Hub
from gtop.core.status import Status

if TYPE_CHECKING:
    import numpy as np

    from gtop.cupti.decode import NameTable

MAX_AGENTS = 256
"""Agents connected at once; more are refused, so a flood cannot take every descriptor."""
MAX_PENDING_BYTES = 256 << 20
"""Unfinished frames held for all agents together: past it, the agent whose bytes tip it
over is cut off (a frame may announce 64 MiB; agents send 1 MiB buffers)."""
RECV_BYTES = 1 << 20
SELECT_S = 0.1
SEND_TIMEOUT_S = 1.0


_sessions = itertools.count(1 << 32)  # above any pid


class _Conn:
    def __init__(self, sock: socket.socket, pid: int, names: NameTable, hub: Hub) -> None:
        from gtop.collectors.agent.probed import ProbedLaunches
        from gtop.cupti.clock import ClockTracker
        from gtop.cupti.decode import Decoder

        self.sock = sock
        self.send_lock = threading.Lock()
        self.reader = wire.FrameReader()
        self.decoder = Decoder(pid, names, session=next(_sessions))
        self.clock = ClockTracker()
        self.status = AgentStatus(pid)
        self.probes = ProbedLaunches(hub, pid)
        self.untraced_since: int | None = None
        """Kernel sampling's off phase began here (CLOCK_MONOTONIC ns); None when on."""
        self.ranges = (0, 0)
        """NVTX ranges counted since the first one's start (ns): their rate's window."""


class AgentLink:
    """Listens for agents and feeds what they send into ``hub``.

    Args:
        hub: where batches and entities go.
        mode, options: see :class:`~.folder.LinkFolder`.
        folder: one made earlier (an attach queued before the session's imports), with
            its own mode and options (``mode`` and ``options`` are then not used).

    Raises:
        ValueError: unknown mode or kind.
    """

    name = "agent"

    def __init__(
        self,
        hub: Hub,
        mode: str = "default",
        options: dict[str, Any] | None = None,
        folder: LinkFolder | None = None,
    ) -> None:
        self.folder = folder if folder is not None else LinkFolder(mode, options)
        self.hub = hub
        self.mode, self.options = self.folder.mode, self.folder.options
        self.dir, self.path = self.folder.dir, self.folder.path
        self._listener = self.folder.listener
        self.boot = self.folder.boot
        self._names: NameTable | None = None
        """Kernel and marker names of every agent; made with the first one, as is all
        the decoding machinery: the link listens before a launch, and its imports
        (probes, CUPTI tables, numpy) would delay the target."""
        self._conns: dict[int, _Conn] = {}
        self._statuses: dict[int, AgentStatus] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.refused: tuple[int, str] = (0, "")
        """Connections refused (out of descriptors, too many agents), and the last why."""
        self._spare: int | None = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        self._wake_r, self._wake_w = os.pipe()
        """Written by :meth:`stop`: the thread leaves its select at once, not after up to
        ``SELECT_S`` (every ``gtop record`` waited for it at its end)."""
        self._thread = threading.Thread(target=self._run, name="gtop-agent-link", daemon=True)

    # --- the two ways in: launched with the agent, or injected into a running process --

    @property
    def boot_dir(self) -> str:
        """The folder the agent's code is imported from (PYTHONPATH or injected code)."""
        return str(self.boot.path)

    def launch_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment that makes every Python process it reaches load the agent."""
        return self.folder.launch_env(base)

    def injection_code(self) -> str:
        """Python source that, run inside a target, starts the agent (never raises)."""
        return self.folder.injection_code()

    def grant(self, uid: int) -> None:
        """See :meth:`~.folder.LinkFolder.grant`."""
        self.folder.grant(uid)

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> AgentLink:
        self._thread.start()
        return self

    def stop(self, detach: bool = True, timeout: float = 3.0) -> None:
        """Ask every agent to detach (tracing off, target at full speed), then close."""
        if detach:
            for conn in list(self._conns.values()):
                self._send(conn, wire.json_frame(wire.CONTROL, {"op": "detach"}))
            deadline = time.monotonic() + timeout
            while self._conns and time.monotonic() < deadline:
                time.sleep(0.02)
        first = not self._stop.is_set()
        self._stop.set()
        with self._cond:
            self._cond.notify_all()  # a wait() for an agent that never came ends now
        if first and self._thread.is_alive():
            with contextlib.suppress(OSError):  # the thread ended meanwhile: nothing to wake
                os.write(self._wake_w, b"\0")
        if self._thread.is_alive():
            self._thread.join(timeout)
        elif self._thread.ident is None and first:  # never started
            self._listener.close()
            self._close_spare()
            os.close(self._wake_r)
        if first:
            os.close(self._wake_w)
        self.folder.remove()

    @property
    def stopped(self) -> bool:
        """:meth:`stop` was called."""
        return self._stop.is_set()

    def statuses(self) -> list[Status]:
        """One line per agent seen (exited ones included): state, what it traces, counts."""
        lines = [
            Status(f"agent {pid}", ok=st.state not in REFUSALS, detail=st.summary())
            for pid, st in self.status().items()
        ]
        count, why = self.refused
        if count:
            lines.append(Status("agent link", ok=False, detail=f"{count} refused ({why})"))
        return lines

    def status(self) -> dict[int, AgentStatus]:
        """The latest status of every agent seen, by pid (exited ones included)."""
        with self._cond:
            return dict(self._statuses)

    def wait(self, pid: int | None, states: tuple[str, ...], timeout: float) -> AgentStatus | None:
        """Wait until an agent (``pid``, or any) reaches one of ``states``; None after
        ``timeout`` or once the link stops."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for st in self._statuses.values():
                    if (pid is None or st.pid == pid) and st.state in states:
                        return st
                left = deadline - time.monotonic()
                if left <= 0 or self._stop.is_set():
                    return None
                self._cond.wait(left)

    def set_kinds(self, kinds: list[str], pid: int | None = None) -> None:
        """Change the activity kinds traced, live (``pid`` None: every agent).

        Raises:
            ValueError: an unknown kind.
        """
        kinds_for(",".join(kinds))
        for conn in list(self._conns.values()):
            if pid is None or conn.status.pid == pid:
                self._send(conn, wire.json_frame(wire.CONTROL, {"op": "kinds", "kinds": kinds}))

    def set_probe(
        self, pid: int, kernel: str, probe: str, every: int = 0, on: bool = True
    ) -> str | None:
        """Turn ``probe`` on or off for kernel ``kernel`` (its exact name) in ``pid``,
        for 1 launch in ``every`` (1: every launch; 0: the agent keeps the probe's cost
        within its budget, :mod:`gtop.agent.probe_budget`).

        The agent's answer arrives as a ``probe_control`` entity; records as
        ``probe_*`` streams. Returns a refusal without asking the agent when the kernel
        cannot be probed (no PTX: PyTorch built-in and cuBLAS kernels) or no agent is
        connected for ``pid``; None when the request was sent.

        Raises:
            KeyError: an unknown probe.
        """
        from gtop.probes.catalog import PROBES
        from gtop.probes.engine.instrumentable import refusal

        if probe not in PROBES:
            raise KeyError(f"unknown probe {probe!r} (probes: {', '.join(PROBES)})")
        why = refusal(kernel) if on else None
        conn = self._conns.get(pid)
        if why is None and conn is None:
            why = "no agent in this process: start it with gtop run, or attach"
        pattern = f"^{re.escape(kernel)}$"
        if why is not None:
            value = {"kernel": pattern, "probe": probe, "on": on, "ok": False, "message": why}
            self._publish_probe_state(pid, value)
            return why
        msg = {"op": "probe", "kernel": pattern, "probe": probe, "every": every, "on": on}
        self._send(conn, wire.json_frame(wire.CONTROL, msg))
        return None

    def _publish_probe_state(self, pid: int, value: dict[str, Any]) -> None:
        key = f"{pid}:{value.get('probe')}:{value.get('kernel')}"
        entity = Entity("probe_control", key, time.monotonic_ns(), {**value, "pid": pid})
        self.hub.publish_entity(entity)

    # --- the thread -------------------------------------------------------------------

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ)
        sel.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(SELECT_S):
                    if key.fileobj is self._listener:
                        self._accept(sel)
                    elif key.data is not None:  # an agent (the wake-up pipe has none)
                        self._receive_guarded(sel, key.data)
        finally:
            for conn in list(self._conns.values()):
                self._close(sel, conn)
            sel.close()
            self._listener.close()
            self._close_spare()
            os.close(self._wake_r)

    def _accept(self, sel: selectors.BaseSelector) -> None:
        """Take one connection; whatever goes wrong refuses that one, never the link."""
        try:
            sock, _ = self._listener.accept()
        except OSError as exc:
            self._refuse(exc.strerror or str(exc))
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                self._shed()
            return
        try:
            pid, uid = wire.peer_uid(sock)
        except OSError:
            sock.close()
            return
        if not (os.geteuid() == 0 or wire.peer_allowed(uid, os.geteuid())):
            sock.close()
            return
        old = self._conns.get(pid)
        if old is not None:  # the same process dialled again (its old socket was lost)
            self._close(sel, old)
        if len(self._conns) >= MAX_AGENTS:
            sock.close()
            self._refuse(f"more than {MAX_AGENTS} agents at once")
            return
        sock.settimeout(SEND_TIMEOUT_S)
        if self._names is None:
            from gtop.cupti.decode import NameTable

            self._names = NameTable()
        conn = _Conn(sock, pid, self._names, self.hub)
        self._conns[pid] = conn
        sel.register(sock, selectors.EVENT_READ, conn)
        self._update(conn)

    def _refuse(self, why: str) -> None:
        with self._cond:
            self.refused = (self.refused[0] + 1, why)

    def _close_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            os.close(spare)

    def _shed(self) -> None:
        """Out of descriptors: give the spare one up to take the waiting connection and
        close it, so it stops waking the loop (the listener would stay readable)."""
        self._close_spare()
        with contextlib.suppress(OSError):
            self._listener.accept()[0].close()
        with contextlib.suppress(OSError):
            self._spare = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def _receive_guarded(self, sel: selectors.BaseSelector, conn: _Conn) -> None:
        """:meth:`_receive`; whatever one agent sends can only end that agent's link."""
        try:
            self._receive(sel, conn)
        except Exception as exc:  # shown as the agent's state, as data
            self._update(conn, state="error", message=f"link: {type(exc).__name__}: {exc}")
            self._close(sel, conn)

    def _receive(self, sel: selectors.BaseSelector, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(RECV_BYTES, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(sel, conn)
            return
        try:
            for kind, payload in conn.reader.feed(data):
                self._handle(conn, kind, payload)
            if sum(c.reader.pending for c in self._conns.values()) > MAX_PENDING_BYTES:
                raise wire.ProtocolError(
                    f"agents hold over {MAX_PENDING_BYTES >> 20} MiB of unfinished frames"
                )
        except wire.ProtocolError as exc:
            self._update(conn, state="error", message=f"protocol error: {exc}")
            self._close(sel, conn)
            return
        self._ask_names(conn)

    def _ask_names(self, conn: _Conn) -> None:
        """Ask the agent to resolve the name pointers first seen in its buffers."""
        pending = self._names.take_pending(conn.decoder.session)
        if pending:
            self._send(conn, wire.json_frame(wire.CONTROL, {"op": "resolve", "pointers": pending}))

    def _handle(self, conn: _Conn, kind: int, payload: bytes) -> None:
        if kind == wire.BUFFER:
            self._buffer(conn, payload)
        elif kind == wire.DRAIN:
            # every buffer before this frame is decoded: ask for the last names, then
            # let the agent finalise CUPTI (the agent answers in order)
            self._ask_names(conn)
            self._send(conn, wire.json_frame(wire.CONTROL, {"op": "drained"}))
        elif kind == wire.HELLO:
            hello = wire.decode_json(payload)
            py = ".".join(str(v) for v in hello.get("python", []))
            self._update(conn, python=py, argv=tuple(hello.get("argv", ())))
        elif kind == wire.STATE:
            msg = wire.decode_json(payload)
            if "record_sizes" in msg:
                conn.decoder.set_sizes(msg["record_sizes"])
            changes: dict[str, Any] = {
                "state": str(msg.get("state", "")),
                "message": str(msg.get("message", "")),
            }
            if "kinds" in msg:
                changes["kinds"] = tuple(msg["kinds"])
            if "cupti_version" in msg:
                changes["cupti_version"] = int(msg["cupti_version"])
            if "callbacks" in msg:
                changes["callbacks"] = str(msg["callbacks"])
            self._update(conn, **changes)
        elif kind == wire.CLOCK:
            fit = conn.clock.add(wire.decode_json(payload).get("samples", []))
            if fit is not None:
                self.hub.publish_entity(
                    Entity("clock_fit", f"cupti:{conn.status.pid}", fit.t_ns, fit.value())
                )
        elif kind == wire.COST:
            st = conn.status
            from gtop.analysis.report.agent_cost import cost_value

            value = cost_value(wire.decode_json(payload), st.records, st.records_by_kind)
            self._set(conn, replace(st, cost=value))
            self.hub.publish_entity(Entity("agent_cost", str(st.pid), time.monotonic_ns(), value))
        elif kind == wire.COVERAGE:
            self._coverage(conn, wire.decode_json(payload))
        elif kind == wire.PROBE:
            conn.probes.receive(payload)
        elif kind == wire.PROBE_STATE:
            self._publish_probe_state(conn.status.pid, wire.decode_json(payload))
        elif kind == wire.NAMES:
            names = wire.decode_json(payload).get("names", {})
            names = {int(k): v for k, v in names.items()}
            resolved = self._names.resolved(conn.decoder.session, names)
            now = time.monotonic_ns()
            for entity_kind, name_id, name in resolved:
                value = {"name": name, "pid": conn.status.pid}
                self.hub.publish_entity(Entity(entity_kind, str(name_id), now, value))

    def _coverage(self, conn: _Conn, msg: dict[str, Any]) -> None:
        """Kernel sampling switched tracing on or off: publish the untraced span."""
        t_ns, on = msg.get("t_ns"), msg.get("on")
        if type(t_ns) is not int or type(on) is not bool:
            raise wire.ProtocolError(f"bad coverage frame {msg!r:.80}")
        if not on and conn.untraced_since is None:
            conn.untraced_since = t_ns
            self._publish_untraced(conn, t_ns, -1)
        elif on and conn.untraced_since is not None:
            self._end_untraced(conn, t_ns)
        duty, rate = msg.get("duty"), msg.get("rate")
        numbers = all(isinstance(v, (int, float)) for v in (duty, rate))
        sampling = {"duty": float(duty), "rate": float(rate)} if numbers and duty < 1 else None
        if sampling != conn.status.sampling:
            self._update(conn, sampling=sampling)

    def _end_untraced(self, conn: _Conn, end_ns: int) -> None:
        """Close the open untraced span of ``conn`` at ``end_ns``."""
        start, conn.untraced_since = conn.untraced_since, None
        self._publish_untraced(conn, start, max(start, end_ns))

    def _publish_untraced(self, conn: _Conn, t_ns: int, end_ns: int) -> None:
        from gtop.core.layouts import UNTRACED

        row = UNTRACED.empty(1)
        row["t_ns"], row["end_ns"], row["pid"] = t_ns, end_ns, conn.status.pid
        self.hub.publish(UNTRACED.name, row)

    def _buffer(self, conn: _Conn, payload: bytes) -> None:
        if len(payload) < wire.BUFFER_HEAD.size:
            raise wire.ProtocolError("short buffer frame")
        dropped, declined = wire.BUFFER_HEAD.unpack_from(payload)
        raw = memoryview(payload)[wire.BUFFER_HEAD.size :]
        try:
            decoded = conn.decoder.decode(raw, conn.clock.current)
        except Exception:
            from gtop.cupti.decode import Decoded

            # A buffer we cannot decode is lost data, counted and shown (its bytes as
            # undecoded, its drop count still added below); the link lives on.
            self.hub.count_source_drops("cupti buffers undecodable", 1)
            decoded = Decoded(undecoded_bytes=len(raw))
        now = time.monotonic_ns()
        for entity_kind, name_id, name in decoded.names:
            value = {"name": name, "pid": conn.status.pid}
            self.hub.publish_entity(Entity(entity_kind, str(name_id), now, value))
        for stream, batch in decoded.batches.items():
            self.hub.publish(stream, batch)
        if "marker" in decoded.batches:
            self._count_ranges(conn, decoded.batches["marker"]["t_ns"])
        if dropped:
            self.hub.count_source_drops("cupti", dropped)
        if decoded.incomplete:  # in flight at a forced flush: lost, and said so
            self.hub.count_source_drops("cupti records without times", decoded.incomplete)
        st = conn.status
        by_kind = dict(st.records_by_kind)
        for k, n in decoded.records.items():
            by_kind[k] = by_kind.get(k, 0) + n
        received = sum(decoded.records.values())
        self._set(
            conn,
            replace(
                st,
                records=st.records + received,
                dropped=st.dropped + dropped,
                undecoded_bytes=st.undecoded_bytes + decoded.undecoded_bytes,
                incomplete=st.incomplete + decoded.incomplete,
                buffers=st.buffers + 1,
                declined=declined,
                records_by_kind=by_kind,
                first_record_ns=st.first_record_ns
                if st.first_record_ns is not None or not received
                else time.monotonic_ns(),
            ),
        )

    def _count_ranges(self, conn: _Conn, starts: np.ndarray) -> None:
        """Stop tracing NVTX ranges in ``conn``'s process once they come faster than
        :data:`~gtop.agent.sampling.RANGES_ABOVE` over a second of their own times."""
        if not len(starts) or "marker" not in conn.status.kinds or conn.status.nvtx_off:
            return  # (ranges already off: the agent says so at its next on phase)
        n, since = conn.ranges
        since = since or int(starts.min())
        n += len(starts)
        span = int(starts.max()) - since
        if span < 1_000_000_000:
            conn.ranges = (n, since)
            return
        conn.ranges = (0, 0)
        rate = n / (span / 1e9)
        if rate > RANGES_ABOVE:
            kinds = [k for k in conn.status.kinds if k != "marker"]
            self._send(conn, wire.json_frame(wire.CONTROL, {"op": "kinds", "kinds": kinds}))
            self._update(conn, nvtx_off=round(rate))

    def _send(self, conn: _Conn, data: bytes) -> None:
        """Send a control frame; a dead agent is noticed by the receiving side."""
        try:
            with conn.send_lock:
                conn.sock.sendall(data)
        except OSError:
            pass

    def _close(self, sel: selectors.BaseSelector, conn: _Conn) -> None:
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(conn.sock)
        conn.sock.close()
        self._conns.pop(conn.status.pid, None)
        if conn.untraced_since is not None:  # ended while off: untraced until now
            self._end_untraced(conn, time.monotonic_ns())
        if conn.status.state not in (*REFUSALS, "exited"):
            gone = _gone(conn.status.pid)
            self._update(conn, state="exited" if gone else "detached", sampling=None)
        elif conn.status.sampling is not None:
            self._update(conn, sampling=None)

    def _update(self, conn: _Conn, **changes: Any) -> None:
        """Apply a state change and publish it as the agent's entity."""
        self._set(conn, replace(conn.status, **changes))
        st = conn.status
        value = {
            "state": st.state,
            "message": st.message,
            "kinds": list(st.kinds),
            "cupti_version": st.cupti_version,
            "python": st.python,
            "argv": list(st.argv),
            "sampling": st.sampling,
            "nvtx_off": st.nvtx_off,
        }
        self.hub.publish_entity(Entity("agent", str(st.pid), time.monotonic_ns(), value))

    def _set(self, conn: _Conn, status: AgentStatus) -> None:
        with self._cond:
            conn.status = status
            self._statuses[status.pid] = status
            self._cond.notify_all()


def _gone(pid: int) -> bool:
    """True when ``pid`` has exited (a zombie counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
