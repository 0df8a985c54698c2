"""Test target: a launch loop's frequent non-blocking CUDA call, without a GPU.

ARGV[1] is a folder with a ``libcudart.so.13`` whose ``cudaMemcpyAsync`` returns at once
(a probed call: it can block, so gtop times it). The main thread calls it, then runs
``WORK_S`` of Python, over and over: ~4k probed calls a second, as torch's
``tensor.copy_`` in a decode loop. Prints ``READY {json}`` once the library is loaded.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time

WORK_S = 0.00025


def main() -> None:
    rt = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
    copy = rt.cudaMemcpyAsync
    copy.argtypes = [ctypes.c_void_p] * 5
    info = {"pid": os.getpid(), "tid": threading.get_native_id()}
    print("READY " + json.dumps(info), flush=True)
    while True:
        copy(None, None, None, None, None)
        end = time.perf_counter() + WORK_S
        while time.perf_counter() < end:
            pass


if __name__ == "__main__":
    main()
