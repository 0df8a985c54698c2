"""Constructed workloads whose on-/off-GPU breakdown is known by construction.

Each iteration runs GPU work of about ``--kernel-ms`` (bf16 matmuls, calibrated at
start with CUDA events), waits for it, then:

* ``app``: a Python busy loop of ``--gap-ms``                      → H:APP
* ``sleep``: ``time.sleep(--gap-ms)``                              → OFF_CPU
* ``io``: O_DIRECT reads of a 512 MB scratch file in ``--io-dir`` (a disk, not tmpfs;
  the JSON says whether O_DIRECT worked) for ``--gap-ms``          → H:IO
* ``tiny``: instead of matmuls, ``--launches`` empty kernels, each launched by its own
  ``cuLaunchKernel`` call, then one synchronise                  → H:CTRL dominant
* ``hostfunc``: the work and then a ``cuLaunchHostFunc`` callback sleeping ``--gap-ms``
  go on one stream while the main thread waits in ``cuStreamSynchronize``: the GPU idles
  while the host waits on it                                      → H:WAIT_GPU

At the end it prints one JSON line: the CLOCK_MONOTONIC window to attribute and the
expected shares, measured by the workload itself (GPU time from CUDA events, gap time
from ``perf_counter``, callback time inside the callback). Under a minute by default.

Run under gtop, e.g. (from the repository root)::

    gtop record -o recordings/constructed-app.gtop -- \
        python benchmarks/workloads/constructed.py --case app
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import tempfile
import time
from collections.abc import Callable

import torch
from _common import calibrated_matmuls, emit, now_ns

HOSTFN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
NOOP_PTX = b"""
.version 8.0
.target sm_90
.address_size 64
.visible .entry noop()
{
    ret;
}
"""


class Driver:
    """The few CUDA driver calls the cases need, through ctypes (which drops the GIL
    during each call, so a host callback can run while the main thread waits)."""

    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        vp, u = ctypes.c_void_p, ctypes.c_uint
        lib.cuLaunchHostFunc.argtypes = [vp, HOSTFN, vp]
        lib.cuStreamSynchronize.argtypes = [vp]
        lib.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        lib.cuLaunchKernel.argtypes = [vp, u, u, u, u, u, u, u, vp, vp, vp]
        self.lib = lib

    def check(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"{what} failed with CUresult {code}")

    def synchronize(self, stream: int) -> None:
        self.check(self.lib.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def host_func(self, stream: int, fn: ctypes._CFuncPtr) -> None:
        self.check(self.lib.cuLaunchHostFunc(stream, fn, None), "cuLaunchHostFunc")

    def noop_kernel(self) -> ctypes.c_void_p:
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), NOOP_PTX), "cuModuleLoadData")
        self.check(
            self.lib.cuModuleGetFunction(ctypes.byref(func), module, b"noop"), "cuModuleGetFunction"
        )
        return func


class Reader:
    """Uncached reads of a scratch file: O_DIRECT where the filesystem allows it,
    else a page-cache drop (POSIX_FADV_DONTNEED) before each read."""

    CHUNK = 1 << 20

    def __init__(self, folder: str, size: int = 512 << 20) -> None:
        fd, self.path = tempfile.mkstemp(prefix="gtop-io-", dir=folder)
        block = os.urandom(self.CHUNK)
        for _ in range(size // self.CHUNK):
            os.write(fd, block)
        os.fsync(fd)
        os.close(fd)
        self.size = size
        self.buf = mmap.mmap(-1, self.CHUNK)  # page-aligned, as O_DIRECT needs
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            self.direct = True
        except OSError:
            self.fd = os.open(self.path, os.O_RDONLY)
            self.direct = False
        self.offset = 0

    def read_for(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if not self.direct:
                os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.preadv(self.fd, [self.buf], self.offset)
            self.offset = (self.offset + 7 * self.CHUNK) % self.size

    def close(self) -> None:
        os.close(self.fd)
        os.unlink(self.path)


def busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run(
    case: str, kernel_ms: float, gap_ms: float, seconds: float, launches: int, io_dir: str
) -> None:
    drv = Driver()
    stream = torch.cuda.Stream()
    handle = stream.cuda_stream
    gap = gap_ms / 1000
    callback_s = [0.0]

    def sleeping_callback(_: int | None) -> None:
        t = time.perf_counter()
        time.sleep(gap)
        callback_s[0] += time.perf_counter() - t

    callback = HOSTFN(sleeping_callback)  # kept alive for the whole run
    reader = Reader(io_dir) if case == "io" else None
    with torch.cuda.stream(stream):
        if case == "tiny":
            func = drv.noop_kernel()
            drv.check(
                drv.lib.cuLaunchKernel(func, 1, 1, 1, 32, 1, 1, 0, handle, None, None),
                "cuLaunchKernel",
            )

            def work() -> None:
                for _ in range(launches):
                    drv.lib.cuLaunchKernel(func, 1, 1, 1, 32, 1, 1, 0, handle, None, None)

            work_ms = None
        else:
            work, work_ms = calibrated_matmuls(kernel_ms)
        gaps: dict[str, Callable[[], None]] = {
            "app": lambda: busy(gap),
            "sleep": lambda: time.sleep(gap),
            "io": lambda: reader.read_for(gap),
            "tiny": lambda: None,
            "hostfunc": lambda: None,
        }
        gap_s = [0.0]

        def iteration(start: torch.cuda.Event, end: torch.cuda.Event) -> None:
            start.record(stream)
            work()
            end.record(stream)
            if case == "hostfunc":
                drv.host_func(handle, callback)
            drv.synchronize(handle)
            t = time.perf_counter()
            gaps[case]()
            gap_s[0] += time.perf_counter() - t

        def timed_events() -> tuple[torch.cuda.Event, torch.cuda.Event]:
            return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        t = time.perf_counter()
        iteration(*timed_events())  # warm-up, and the length of one iteration
        iterations = max(1, int(seconds / (time.perf_counter() - t)))
        events = [timed_events() for _ in range(iterations)]
        gap_s[0], callback_s[0] = 0.0, 0.0
        drv.synchronize(handle)
        t0 = now_ns()
        for start, end in events:
            iteration(start, end)
        drv.synchronize(handle)
        t1 = now_ns()
    if reader is not None:
        reader.close()
    window_s = (t1 - t0) / 1e9
    gpu_s = sum(s.elapsed_time(e) for s, e in events) / 1000
    cause = {"app": "H:APP", "sleep": "OFF_CPU", "io": "H:IO", "hostfunc": "H:WAIT_GPU"}
    if case == "tiny":  # events span idle time between the tiny kernels: no G:COMP share
        expected = {"dominant": "H:CTRL"}
    else:
        waited = callback_s[0] if case == "hostfunc" else gap_s[0]
        expected = {"G:COMP": gpu_s / window_s, cause[case]: waited / window_s}
    emit(
        f"constructed-{case}",
        (t0, t1),
        expected,
        iterations=iterations,
        kernel_ms=work_ms,
        gap_ms=gap_ms,
        launches=launches if case == "tiny" else None,
        io_direct=reader.direct if reader is not None else None,
        tolerance_pp=3,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", required=True, choices=["app", "sleep", "io", "tiny", "hostfunc"])
    ap.add_argument("--kernel-ms", type=float, default=5.0, help="GPU work per iteration (X)")
    ap.add_argument("--gap-ms", type=float, default=5.0, help="host gap per iteration (Y, Z)")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of the measured loop")
    ap.add_argument("--launches", type=int, default=5000, help="tiny: kernels per iteration")
    ap.add_argument("--io-dir", default=".", help="io: scratch file folder, on a disk (not tmpfs)")
    args = ap.parse_args()
    run(args.case, args.kernel_ms, args.gap_ms, args.seconds, args.launches, args.io_dir)


if __name__ == "__main__":
    main()
