"""Test target: a "GPU program" on the fake libcuda/libcupti of tests/agent/fake_cupti.c.

Reads commands on stdin, answers one line each:
``init`` (cuInit), ``launch N NAME`` (N fake kernels; answers the monotonic time range),
``mask`` (enabled CUPTI kinds), ``exit``.
"""

import ctypes
import os
import sys
import time

cuda = ctypes.CDLL(os.environ["FAKE_CUDA_LIB"], mode=ctypes.RTLD_GLOBAL)
cupti = ctypes.CDLL(os.environ["GTOP_CUPTI_LIB"])
cupti.fake_enabled_mask.restype = ctypes.c_uint64
names = {}
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "init":
        cuda.cuInit(0)
        print("ok", flush=True)
    elif cmd[0] == "launch":
        name = names.setdefault(cmd[2], ctypes.create_string_buffer(cmd[2].encode()))
        t0 = time.monotonic_ns()
        cupti.fake_launch(int(cmd[1]), name)
        print("launched", t0, time.monotonic_ns(), flush=True)
    elif cmd[0] == "mask":
        print("mask", cupti.fake_enabled_mask(), flush=True)
    elif cmd[0] == "exit":
        break
