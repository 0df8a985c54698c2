"""Host side of a probe on the GPU, through the CUDA driver (``cuda.bindings``).

:class:`ProbeBuffers` binds a record buffer to an instrumented ``CUmodule`` through
``cuModuleGetGlobal`` (the module may come from :func:`load_ptx` or from Triton's
``kernel_load_end_hook``), resets its counters before a launch and reads records back,
either synchronously or without blocking the application's stream (event + side stream).
Needs a CUDA context current on the calling thread (torch creates the primary one).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np
from cuda.bindings import driver

from . import copyback, maps
from .probe import MapKind, Probe


def _sm_count() -> int:
    """Multiprocessors of the current context's device."""
    device = check(driver.cuCtxGetDevice())
    attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return int(check(driver.cuDeviceGetAttribute(attr, device)))


class CudaError(RuntimeError):
    """A CUDA driver call failed."""


def check(result: tuple) -> Any:
    """Unwrap a ``cuda.bindings`` result tuple ``(err, *values)``.

    Raises:
        CudaError: naming the failed call's error.
    """
    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise CudaError(name.decode() if isinstance(name, bytes) else str(err))
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def load_ptx(text: str) -> driver.CUmodule:
    """JIT-load PTX text with ``cuModuleLoadData``."""
    image = np.frombuffer(text.encode() + b"\0", dtype=np.uint8)
    return check(driver.cuModuleLoadData(image.ctypes.data))


def launch(
    module: driver.CUmodule,
    name: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    args: list[np.generic],
    shared: int = 0,
    stream: int = 0,
) -> None:
    """Launch kernel ``name`` of ``module``; ``args`` are numpy scalars of the PTX param
    types in order (``np.uint64(ptr)`` for pointers)."""
    fn = check(driver.cuModuleGetFunction(module, name.encode()))
    if shared > 48 * 1024:
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(driver.cuFuncSetAttribute(fn, attr, shared))
    boxes = [np.array([a]) for a in args]
    params = np.array([b.ctypes.data for b in boxes], dtype=np.uint64)
    check(
        driver.cuLaunchKernel(
            fn, *grid, *block, shared, driver.CUstream(stream), params.ctypes.data, 0
        )
    )


@dataclass
class Fence:
    """An event after the work queued so far on a stream; :meth:`passed` never blocks."""

    event: driver.CUevent

    @classmethod
    def after(cls, stream: int) -> Fence:
        event = check(driver.cuEventCreate(2))  # CU_EVENT_DISABLE_TIMING
        check(driver.cuEventRecord(event, driver.CUstream(stream)))
        return cls(event)

    def passed(self) -> bool:
        (err,) = driver.cuEventQuery(self.event)
        if err == driver.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((err,))
        return True

    def wait(self) -> None:
        check(driver.cuEventSynchronize(self.event))

    def close(self) -> None:
        check(driver.cuEventDestroy(self.event))


@dataclass
class Pending:
    """A launch's copy on its way back on the side stream; :meth:`ready` never blocks."""

    done: Fence
    host: memoryview
    owner: ProbeBuffers

    def ready(self) -> bool:
        return self.done.passed()

    def take(self) -> bytes:
        """The copy, trimmed to the rows worth shipping (:func:`.copyback.trim`), once;
        waits for the copy if it is not :meth:`ready`. Standard library only: the
        agent's thread calls it inside the target, and gtop decodes the bytes."""
        self.done.wait()
        self.done.close()
        return copyback.trim(self.owner.layout, self.host)


class ProbeBuffers:
    """The device record buffer of one instrumented module, bound through its globals."""

    def __init__(
        self, module: driver.CUmodule | int, probe: Probe, header: dict, capacity: int
    ) -> None:
        """``probe`` is the one ``module`` was instrumented with, ``header`` its
        :func:`~.rewrite.read_header`; a ring's ``capacity`` is rounded up to whole
        stripes (one per SM)."""
        self.module = module if isinstance(module, driver.CUmodule) else driver.CUmodule(module)
        self.probe = probe
        self.ring = header["map"] == "ring"
        self.stripes = min(_sm_count(), maps.MAX_STRIPES) if self.ring else 1
        self.per = -(-capacity // self.stripes)
        self.capacity = self.per * self.stripes
        self.record = self.probe.device_record(MapKind(header["map"]))
        self.nbytes = self.capacity * self.record.itemsize
        # host copy: overflow, pad, gtop_launch, stripe counters
        self.head = 24 + 4 * self.stripes
        self.globals = {
            name: int(check(driver.cuModuleGetGlobal(self.module, name.encode()))[0])
            for name in maps.GLOBALS
        }
        self.buf = int(check(driver.cuMemAlloc(max(self.nbytes, 16))))
        self._set("gtop_buf", np.uint64(self.buf))
        self._set("gtop_stripes", np.uint32(self.stripes))
        self._set("gtop_per", np.uint32(self.per))
        self._set("gtop_cap", np.uint32(self.capacity))  # armed until told otherwise
        self._side = check(driver.cuStreamCreate(1))  # CU_STREAM_NON_BLOCKING
        self._host_ptr = 0
        self.layout = copyback.Layout(
            probe=self.probe.name,
            map=header["map"],
            stripes=self.stripes,
            per=self.per,
            record_bytes=self.record.itemsize,
            packed=self.record != self.probe.record,
        )

    def _set(self, name: str, value: np.generic) -> None:
        box = np.array([value])
        dst = driver.CUdeviceptr(self.globals[name])
        check(driver.cuMemcpyHtoD(dst, box.ctypes.data, box.nbytes))

    def reset(self, stream: int = 0, clear: bool = True) -> None:
        """Arm the probe and zero its counters (and the records when ``clear``), all in
        ``stream`` order."""
        s = driver.CUstream(stream)
        counters = (("gtop_overflow", 1), ("gtop_launch", 4), ("gtop_slot", self.stripes))
        for name, count in counters:
            check(driver.cuMemsetD32Async(driver.CUdeviceptr(self.globals[name]), 0, count, s))
        if clear:
            check(driver.cuMemsetD8Async(driver.CUdeviceptr(self.buf), 0, self.nbytes, s))
        self.arm(stream, True)

    def arm(self, stream: int, armed: bool) -> None:
        """Set the capacity to the buffer's (armed) or 0 (launches write nothing), in
        ``stream`` order."""
        cap = driver.CUdeviceptr(self.globals["gtop_cap"])
        value = self.capacity if armed else 0
        check(driver.cuMemsetD32Async(cap, value, 1, driver.CUstream(stream)))

    def _copies(self) -> list[tuple[int, int, int]]:
        """(host offset, device address, bytes) of everything a host copy holds."""
        return [
            (0, self.globals["gtop_overflow"], 4),
            (8, self.globals["gtop_launch"], 16),
            (24, self.globals["gtop_slot"], 4 * self.stripes),
            (self.head, self.buf, self.nbytes),
        ]

    def read(self) -> tuple[np.ndarray, int]:
        """(records, drops), synchronously (waits for all work on the context); for
        tools and tests in gtop's own process (the agent ships :meth:`copy_async`'s
        bytes undecoded)."""
        check(driver.cuCtxSynchronize())
        host = np.zeros(self.head + self.nbytes, dtype=np.uint8)
        for offset, src, size in self._copies():
            if size:
                check(driver.cuMemcpyDtoH(host[offset:].ctypes.data, driver.CUdeviceptr(src), size))
        return copyback.decode(
            self.layout, copyback.trim(self.layout, memoryview(host)), self.probe
        )

    def claimed(self) -> np.ndarray:
        """Slots claimed per stripe since the last reset (synchronously): a pass with a
        small buffer measures how large the buffer must be for a ring to drop nothing."""
        check(driver.cuCtxSynchronize())
        out = np.zeros(self.stripes, dtype=np.uint32)
        src = driver.CUdeviceptr(self.globals["gtop_slot"])
        check(driver.cuMemcpyDtoH(out.ctypes.data, src, out.nbytes))
        return out

    def copy_async(self, stream: int = 0) -> Pending:
        """Copy records back after the work queued so far on ``stream`` completes, without
        making ``stream`` wait: an event on ``stream``, the copies on a side stream.

        One copy at a time: do not :meth:`reset` or launch the probed kernel again before
        the returned :class:`Pending` is ready (the copy reads the live device buffer).
        """
        total = self.head + self.nbytes
        if not self._host_ptr:
            self._host_ptr = int(check(driver.cuMemHostAlloc(total, 0)))
        host = memoryview((ctypes.c_uint8 * total).from_address(self._host_ptr)).cast("B")
        after = Fence.after(stream)
        check(driver.cuStreamWaitEvent(self._side, after.event, 0))
        for offset, src, size in self._copies():
            if size:
                dst = self._host_ptr + offset
                check(driver.cuMemcpyDtoHAsync(dst, driver.CUdeviceptr(src), size, self._side))
        done = Fence.after(int(self._side))
        after.close()  # destruction is deferred by the driver until the event completes
        return Pending(done, host, self)

    def retire(self, stream: int = 0) -> Fence:
        """Disarm in ``stream`` order; free with :meth:`close` once the fence has passed
        (launches queued before it may still write)."""
        self.arm(stream, False)
        return Fence.after(stream)

    def close(self) -> None:
        """Free the device buffer, the pinned copy and the side stream."""
        check(driver.cuMemFree(driver.CUdeviceptr(self.buf)))
        if self._host_ptr:
            check(driver.cuMemFreeHost(self._host_ptr))
        check(driver.cuStreamDestroy(self._side))
