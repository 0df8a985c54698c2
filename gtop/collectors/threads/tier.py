"""What every host-thread tier shares: the sampling thread, the process tree, publishing.

A tier subclasses :class:`ThreadCollector` and implements :meth:`_open`, :meth:`_poll`
and :meth:`_close`. The base runs them on a named daemon thread with a jittered period,
follows the target's descendants, publishes thread names, and carries errors as data
(:attr:`status`), never as exceptions escaping the thread.
"""

from __future__ import annotations

import time

import numpy as np

from gtop.analysis.host.pystack_carry import carry
from gtop.collectors.base import Periodic
from gtop.collectors.threads import proctree, pystacks
from gtop.collectors.threads.stacktable import KERNEL, NATIVE, PYTHON, StackTable
from gtop.core.hub import Entity, Hub
from gtop.core.layouts import CPU_SAMPLE, THREAD_STATE, BlockReason, ThreadState
from gtop.core.status import ThreadStatus

ABANDONED = "last_poll_abandoned"
"""The status error of a tier whose last poll outlived :meth:`ThreadCollector.stop`'s timeout."""


class ThreadCollector:
    """Per-thread state intervals and stacks for a process and its descendants."""

    tier = "base"
    join_margin_ns = 0
    """How far an interval's placement may be off; Python joins keep this far inside it."""

    def __init__(
        self,
        hub: Hub,
        pid: int,
        *,
        period_s: float = 0.1,
        python_stacks: bool = True,
        py_rate_hz: float = pystacks.DEFAULT_RATE_HZ,
        py_idle: bool = True,
        stacks: StackTable | None = None,
    ) -> None:
        self.hub = hub
        self.pid = pid
        self.period_s = period_s
        self.stacks = stacks or StackTable(hub)
        self.status = ThreadStatus(self.tier)
        self.threads: dict[int, int] = {}
        """``{tid: pid}`` of the live threads seen at the last refresh."""
        self.py = pystacks.sampler(pid, py_rate_hz, py_idle) if python_stacks else None
        self._loop = Periodic(self.tier, period_s, self._step, self.status, final_step=True)
        self._tree_at = 0.0
        self._base: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self._base_ids: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
        self._final: dict[tuple[int, int], int] = {}
        self._carry_last: dict[tuple, tuple[int, int]] = {}
        self._pending = {
            THREAD_STATE.name: THREAD_STATE.empty(),
            CPU_SAMPLE.name: CPU_SAMPLE.empty(),
        }

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        """Open the source (raising if it cannot) and start sampling on a daemon thread."""
        self.refresh_tree()
        self._open()
        if self.py is not None:
            self.py.start(self)
        self._loop.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop sampling, flush what is pending and release the source.

        ``timeout``: how long to wait for the poll in progress and the last one (None: as
        long as they take). Past it they are abandoned: their rows are not published and
        the source stays open (their thread still reads it) until gtop exits.
        """
        self._loop.stop(timeout)
        if self.py is not None:
            self.py.stop()
        if self._loop.alive:
            self.status.count_error(
                ABANDONED,
                f"the last poll did not finish within {timeout:.1f} s of the stop; "
                "what it would have read is not recorded",
            )
            return
        self._close()

    def __enter__(self) -> ThreadCollector:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _step(self, final: bool) -> None:
        if time.monotonic() - self._tree_at > 0.25:
            self.refresh_tree()
        self._poll(final=final)
        self.flush(final=final)

    def refresh_tree(self) -> None:
        """Re-read the process tree; publish names of new threads, and of each process's
        main thread, which an ``exec`` renames (a launched target is traced from its
        gate, :mod:`gtop.collectors.gate`; the hub keeps an unchanged name once)."""
        self._tree_at = time.monotonic()
        table = proctree.thread_table(self.pid)
        now = time.monotonic_ns()
        for tid, pid in table.items():
            new = tid not in self.threads
            if new or tid == pid:
                publish_thread_name(self.hub, pid, tid, now, gone_too=new)
        self.threads = table
        self._tree_changed(table)

    # --- stacks and publishing ----------------------------------------------------------
    def base_stack(self, native: tuple[str, ...], kernel: tuple[str, ...]) -> int:
        """A local id for a native+kernel stack (outermost first), before the Python join."""
        key = (native, kernel)
        sid = self._base_ids.get(key)
        if sid is None:
            sid = self._base_ids[key] = len(self._base)
            self._base.append(key)
        return sid

    def submit(self, stream: str, batch: np.ndarray) -> None:
        """Queue THREAD_STATE or CPU_SAMPLE rows whose ``stack_id`` is a :meth:`base_stack` id.

        They are published by :meth:`flush` once Python stacks covering them can have
        been sampled, with ``stack_id`` replaced by the merged stack's id.
        """
        if stream == THREAD_STATE.name:
            batch = batch[batch["end_ns"] > batch["t_ns"]]
        if len(batch):
            self._pending[stream] = np.concatenate([self._pending[stream], batch])

    def flush(self, final: bool) -> None:
        """Join queued rows with Python stacks and publish those old enough."""
        horizon = time.monotonic_ns() - (self.py.pending_ns() if self.py else 0)
        for stream, rows in self._pending.items():
            end = rows["end_ns"] if stream == THREAD_STATE.name else rows["t_ns"]
            ready = np.ones(len(rows), bool) if final else end <= horizon
            if not ready.any():
                continue
            out, self._pending[stream] = rows[ready].copy(), rows[~ready]
            if stream == THREAD_STATE.name:
                t0, t1 = out["t_ns"] + self.join_margin_ns, out["end_ns"] - self.join_margin_ns
                running = out["state"] != ThreadState.BLOCKED
            else:
                t0 = t1 = out["t_ns"]  # the nearest running sample (PyStackSampler.match)
                running = np.ones(len(out), bool)
            py = self.py.match(out["tid"], t0, t1, running) if self.py else np.full(len(out), -1)
            if stream == THREAD_STATE.name and self.py is not None:
                py = self._carry(out, py)
            out["stack_id"] = self._merge(out["stack_id"].astype(np.int64), py)
            if stream == THREAD_STATE.name:
                self.status.intervals += len(out)
            else:
                self.status.samples += len(out)
            self.hub.publish(stream, out)

    def _carry(self, rows: np.ndarray, py: np.ndarray) -> np.ndarray:
        """Python frames for waits no sample landed in
        (:func:`gtop.analysis.host.pystack_carry.carry`).

        Waits only: blocked and runnable intervals, and on-CPU time inside a GPU call
        (``GPU_WAIT``); other on-CPU time moves between Python calls too fast to carry.
        """
        waits = np.flatnonzero(
            (rows["state"] != ThreadState.ON_CPU) | (rows["reason"] != BlockReason.NONE)
        )
        w = rows[waits]
        key = np.stack([w["tid"], w["state"], w["reason"], w["stack_id"]], axis=1)
        out = py.copy()
        out[waits] = carry(
            key.astype(np.int64), w["t_ns"], w["end_ns"], py[waits], self._carry_last
        )
        carried = int(((out >= 0) & (py < 0)).sum())
        self.status.counters["py_carried"] = (
            int(self.status.counters.get("py_carried", 0)) + carried
        )
        return out

    def _merge(self, base: np.ndarray, py: np.ndarray) -> np.ndarray:
        """Final stack ids: Python frames, then the native leaf, then kernel frames."""
        pairs, inverse = np.unique(np.stack([base, py], axis=1), axis=0, return_inverse=True)
        ids = np.empty(len(pairs), dtype=np.int32)
        for i, (b, p) in enumerate(pairs.tolist()):
            sid = self._final.get((b, p))
            if sid is None:
                native, kernel = self._base[b] if b >= 0 else ((), ())
                if p >= 0 and self.py is not None:
                    pyf = self.py.stacks[p]
                    native = native[-1:]
                else:
                    pyf = ()
                kinds = PYTHON * len(pyf) + NATIVE * len(native) + KERNEL * len(kernel)
                sid = self._final[(b, p)] = self.stacks.intern((*pyf, *native, *kernel), kinds)
            ids[i] = sid
        return ids[inverse.reshape(-1)]

    # --- for subclasses ----------------------------------------------------------------
    def _open(self) -> None:
        """Acquire the source. Raises with one clear message when it cannot."""

    def _poll(self, final: bool) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        """Release the source (called once, after the last poll)."""

    def _tree_changed(self, table: dict[int, int]) -> None:
        """Hook: the set of target threads was re-read."""


def publish_thread_name(hub: Hub, pid: int, tid: int, now: int, gone_too: bool = False) -> None:
    """Publish thread ``tid``'s (of process ``pid``) name as it is now: after an exec
    renamed a launched target's main thread (:meth:`gtop.session.live.LiveSource.launch`
    says so at once: a short command may have exited by the next tree refresh), or for a
    new thread; ``gone_too``: publish it even when it is gone (an empty name)."""
    name = proctree.comm(pid, tid)
    if name or gone_too:
        hub.publish_entity(Entity("thread", str(tid), now, {"pid": pid, "name": name}))
