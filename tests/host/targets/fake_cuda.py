"""Test target: CUDA synchronising calls without a GPU, through real shared libraries.

ARGV[1] is a folder with ``libcudart.so.13`` (``cudaStreamSynchronize`` sleeps,
``cudaDeviceSynchronize`` spins on CPU) and ``libcuda.so.1`` (``cuStreamSynchronize_ptsz``
sleeps), built by the test; each call takes ``PHASE_S``. The main thread loops: runtime
sync (blocked), Python busy loop, runtime device sync (spinning), ``time.sleep``, driver
per-thread-stream sync (blocked). Prints ``READY {json}`` once the libraries are loaded.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time

PHASE_S = 0.02


def main() -> None:
    rt = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
    drv = ctypes.CDLL(os.path.join(sys.argv[1], "libcuda.so.1"))
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    drv.cuStreamSynchronize_ptsz.argtypes = [ctypes.c_void_p]
    info = {"pid": os.getpid(), "tid": threading.get_native_id(), "phase_s": PHASE_S}
    print("READY " + json.dumps(info), flush=True)
    while True:
        rt.cudaStreamSynchronize(None)
        end = time.monotonic() + PHASE_S
        while time.monotonic() < end:
            pass
        rt.cudaDeviceSynchronize()
        time.sleep(PHASE_S)
        drv.cuStreamSynchronize_ptsz(None)


if __name__ == "__main__":
    main()
