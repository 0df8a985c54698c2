"""Fit the GPU's ``%globaltimer`` onto CLOCK_MONOTONIC (needs a GPU and a CUDA context).

A one-thread kernel stores ``%globaltimer`` while the host brackets the launch and a
synchronise with ``time.monotonic_ns``, on a private non-blocking stream (so that a
sample inside a profiled process never serialises with the application's streams).
Each launch gives a ``(mono_before, gpu, mono_after)`` triple and
:func:`gtop.cupti.clock.fit` weighs the tightest ones most (the same fit as
for CUPTI timestamps). The error of one sample is at most half its bracket (launch +
synchronise, tens of µs) plus %globaltimer's update step.
"""

from __future__ import annotations

import time

import numpy as np

PTX = """\
.version 7.0
.target sm_70
.address_size 64
.visible .entry gtop_globaltimer(.param .u64 out)
{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd2, %globaltimer;
    st.global.u64 [%rd1], %rd2;
    ret;
}
"""
METHOD = "globaltimer kernel bracketed by CLOCK_MONOTONIC, tightest samples"


def samples(n: int = 64) -> list[tuple[int, int, int]]:
    """``n`` (mono_before, %globaltimer, mono_after) triples from the current context.

    Raises:
        gtop.probes.engine.driver.CudaError: a driver call failed.
    """
    from cuda.bindings import driver

    from .driver import check, launch, load_ptx

    module = load_ptx(PTX)
    flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
    stream = check(driver.cuStreamCreate(flags))
    buf = check(driver.cuMemAlloc(8 * n))
    try:
        brackets = []
        for i in range(n):
            out = [np.uint64(int(buf) + 8 * i)]
            before = time.monotonic_ns()
            launch(module, "gtop_globaltimer", (1, 1, 1), (1, 1, 1), out, stream=int(stream))
            check(driver.cuStreamSynchronize(stream))
            brackets.append((before, time.monotonic_ns()))
        host = np.zeros(n, dtype=np.uint64)
        check(driver.cuMemcpyDtoHAsync(host.ctypes.data, buf, 8 * n, stream))
        check(driver.cuStreamSynchronize(stream))
    finally:
        check(driver.cuMemFree(buf))
        check(driver.cuStreamDestroy(stream))
        check(driver.cuModuleUnload(module))
    return [(b, int(g), a) for (b, a), g in zip(brackets, host, strict=True)]
