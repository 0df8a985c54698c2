"""The activity buffers lent to CUPTI, and the two C-callable callbacks that lend them.

CUPTI asks for an empty buffer on whichever thread needs one and hands full buffers back
on its worker thread. The pool is fixed-size: when every buffer is in flight (gtop reads
too slowly), a request is declined and CUPTI drops records and counts them, so the
target never waits and memory stays bounded.

:class:`ShimPool` (the normal case) keeps both callbacks in C (``cupti_shim.c``), so no
CUPTI callback ever waits for the GIL: a launching thread inside CUPTI's locks that
needed the GIL could deadlock against a Python thread holding it. :class:`BufferPool`
is the fallback where the shim cannot load (another CPU architecture): ctypes
callbacks, one short Python call per buffer (a few MB of records), never per record.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque
from typing import NamedTuple

from .cupti import BufferCompleted, BufferRequested, Cupti, SubscriberCallback
from .native import dlopen


class Completed(NamedTuple):
    """A buffer CUPTI has filled and returned."""

    address: int
    valid: int
    """bytes of records at the start of the buffer."""
    dropped: int
    """records CUPTI dropped for lack of a buffer since the previous one."""


class BufferPool:
    """At most ``count`` buffers of ``size`` bytes, allocated on first use and reused.

    Attributes:
        declined: requests CUPTI made while every buffer was in flight.
    """

    def __init__(self, cupti: Cupti, size: int = 4 << 20, count: int = 8) -> None:
        self.cupti = cupti
        self.size = size
        self.count = count
        self.declined = 0
        self.requested_ns = 0
        """CLOCK_MONOTONIC ns of CUPTI's last buffer request (0: none yet). This
        fallback always lends whole buffers; :class:`ShimPool` sizes them to the rate."""
        self._cost = [0, 0]  # ns in the callbacks, calls
        self._arrays: dict[int, ctypes.Array] = {}
        self._free: deque[int] = deque()
        self._completed: deque[Completed] = deque()
        self._alloc_lock = threading.Lock()
        # CUPTI keeps these pointers: the pool must outlive every registration.
        self.requested_cb = BufferRequested(self._on_requested)
        self.completed_cb = BufferCompleted(self._on_completed)
        self.subscriber_cb = SubscriberCallback(_no_op)
        """Python here (this pool is the fallback without the C shim): CUPTI calling it
        would need the GIL; :class:`ShimPool`'s is C."""

    def _take(self) -> int | None:
        try:
            return self._free.popleft()
        except IndexError:
            pass
        with self._alloc_lock:
            if len(self._arrays) >= self.count:
                return None
            array = (ctypes.c_ubyte * self.size)()  # zero-filled
            address = ctypes.addressof(array)
            self._arrays[address] = array
            return address

    def _on_requested(self, buffer, size, max_records) -> None:
        t0 = time.perf_counter_ns()
        self.requested_ns = time.monotonic_ns()
        try:
            address = self._take()
            max_records[0] = 0
            if address is None:
                self.declined += 1
                buffer[0] = None
                size[0] = 0
            else:
                buffer[0] = address
                size[0] = self.size
        except BaseException:  # never raise into CUPTI's thread
            buffer[0] = None
            size[0] = 0
        self._count(t0)

    def _count(self, t0: int) -> None:
        self._cost[0] += time.perf_counter_ns() - t0
        self._cost[1] += 1

    def costs(self) -> tuple[int, int, int, int]:
        """ns in the buffer callbacks, their calls; shipping is timed by the agent."""
        return self._cost[0], self._cost[1], 0, 0

    def _on_completed(self, context, stream, buffer, _size, valid) -> None:
        t0 = time.perf_counter_ns()
        try:
            dropped = self.cupti.dropped(context, stream)
            if buffer:
                self._completed.append(Completed(buffer, valid, dropped))
            elif dropped:
                self._completed.append(Completed(0, 0, dropped))
        except BaseException:
            pass
        self._count(t0)

    def completed(self) -> list[Completed]:
        """Take every buffer returned since the last call, oldest first."""
        out = []
        while self._completed:
            out.append(self._completed.popleft())
        return out

    def view(self, item: Completed) -> memoryview:
        """The valid bytes of a returned buffer, without copying them."""
        return memoryview(self._arrays[item.address])[: item.valid]

    def release(self, item: Completed) -> None:
        """Zero the used part (CUPTI was promised zeroed buffers) and lend it again."""
        if item.address:
            ctypes.memset(item.address, 0, item.valid)
            self._free.append(item.address)

    def trim(self) -> None:
        """Free every buffer CUPTI does not hold (after tracing stops)."""
        with self._alloc_lock:
            while self._free:
                self._arrays.pop(self._free.popleft(), None)


class ShimPool:
    """The pool kept by ``cupti_shim.c``: same interface as :class:`BufferPool`.

    Raises:
        OSError: the shim library cannot be loaded or set up.
    """

    TAKE = 256

    def __init__(self, cupti: Cupti, shim_path: str, size: int = 4 << 20, count: int = 8):
        lib = dlopen(shim_path)
        if lib is None:
            raise OSError(f"cannot load {shim_path}")
        self.lib = lib
        self.size = size
        lib.gtop_shim_setup.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
        lib.gtop_shim_take.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
        lib.gtop_shim_give.argtypes = [ctypes.c_void_p]
        lib.gtop_shim_declined.restype = ctypes.c_uint64
        lib.gtop_shim_last_request.restype = ctypes.c_uint64
        lib.gtop_shim_ship.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        lib.gtop_shim_costs.argtypes = [ctypes.c_void_p]
        self._costs = (ctypes.c_uint64 * 4)()
        self._bytes_sent = ctypes.c_uint64()
        dropped = ctypes.cast(cupti.lib.cuptiActivityGetNumDroppedRecords, ctypes.c_void_p)
        if lib.gtop_shim_setup(size, count, dropped) != 0:
            raise OSError("cupti shim rejected its settings")
        self.requested_cb = BufferRequested(_address(lib.gtop_shim_requested))
        self.completed_cb = BufferCompleted(_address(lib.gtop_shim_completed))
        self.subscriber_cb = SubscriberCallback(_address(lib.gtop_shim_subscriber))
        self._bufs = (ctypes.c_void_p * self.TAKE)()
        self._valid = (ctypes.c_size_t * self.TAKE)()
        self._dropped = (ctypes.c_size_t * self.TAKE)()

    @property
    def declined(self) -> int:
        return int(self.lib.gtop_shim_declined())

    @property
    def requested_ns(self) -> int:
        """CLOCK_MONOTONIC ns of CUPTI's last buffer request (0: none yet)."""
        return int(self.lib.gtop_shim_last_request())

    def costs(self) -> tuple[int, int, int, int]:
        """ns in the buffer callbacks (on CUPTI's threads), their calls; ns shipping, ships."""
        self.lib.gtop_shim_costs(self._costs)
        return tuple(int(v) for v in self._costs)

    def completed(self) -> list[Completed]:
        n = self.lib.gtop_shim_take(self._bufs, self._valid, self._dropped, self.TAKE)
        return [Completed(self._bufs[i], self._valid[i], self._dropped[i]) for i in range(n)]

    def view(self, item: Completed) -> memoryview:
        return memoryview((ctypes.c_ubyte * item.valid).from_address(item.address))

    def ship(self, fd: int, timeout: float) -> tuple[int, int]:
        """Send every returned buffer to the socket ``fd`` as a BUFFER frame, re-zero it
        and lend it again, all in C (ctypes releases the GIL for the whole call).

        Returns:
            The number of frames sent, or -1 when the socket failed or stayed full for
            ``timeout`` seconds (a frame may be cut: the connection is unusable), and
            the bytes of records they carried. Every buffer is lent again either way;
            ``fd`` -1 only recycles them.
        """
        ms = max(1, int(timeout * 1000))
        sent = self.lib.gtop_shim_ship(fd, ms, ctypes.byref(self._bytes_sent))
        return int(sent), int(self._bytes_sent.value)

    def release(self, item: Completed) -> None:
        if item.address:
            ctypes.memset(item.address, 0, item.valid)
            self.lib.gtop_shim_give(item.address)

    def trim(self) -> None:
        self.lib.gtop_shim_trim()


def _no_op(*args: object) -> None:
    pass


def _address(fn: ctypes._CFuncPtr) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


def make_pool(cupti: Cupti, shim_path: str | None, size: int, count: int) -> ShimPool | BufferPool:
    """The C pool when the shim loads, else the ctypes-callback pool."""
    if shim_path:
        try:
            return ShimPool(cupti, shim_path, size, count)
        except (OSError, AttributeError):
            pass
    return BufferPool(cupti, size, count)
