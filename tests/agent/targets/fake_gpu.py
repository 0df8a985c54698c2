"""Test target: a "GPU program" on the fake libcuda/libcupti of tests/agent/fake_cupti.c.

Reads commands on stdin, answers one line each:
``init`` (cuInit), ``launch N NAME`` (N fake kernels; answers the monotonic time range),
``start RATE NAME`` (launch RATE kernels/s on a thread until ``stop``, which answers how
many), ``mask`` (enabled CUPTI kinds), ``who`` (the launching thread's id and the id
of the thread that called cuptiFinalize, 0 for none), ``nvtx`` (what NVTX does at its
first call: load the library ``NVTX_INJECTION64_PATH`` names and call its
``InitializeInjectionNvtx2``; answers the path, or ``-``), ``ranges N MS NAME`` (N NVTX
ranges NAME one after another, each MS ms long; answers the monotonic time range),
``exit``.

``fake_gpu.py --run RATE SECONDS [STEP_MS]`` instead initialises, launches RATE
kernels/s for SECONDS and exits (for ``gtop record -- CMD``); with STEP_MS, in steps of
STEP_MS each inside an NVTX range ``train_step``, and prints its steps/s as JSON.
"""

import ctypes
import json
import os
import sys
import threading
import time

import stdin_lines  # beside this file

cuda = ctypes.CDLL(os.environ["FAKE_CUDA_LIB"], mode=ctypes.RTLD_GLOBAL)
cupti = ctypes.CDLL(os.environ["GTOP_CUPTI_LIB"])
cupti.fake_enabled_mask.restype = ctypes.c_uint64
cupti.fake_finalized_by.restype = ctypes.c_long
names = {}


def paced(rate: float, name: bytes, until) -> int:
    """Launch ``rate`` kernels/s in small batches until ``until()``; how many."""
    buf = names.setdefault(name, ctypes.create_string_buffer(name))
    t0, done = time.monotonic(), 0
    while not until():
        due = int(rate * (time.monotonic() - t0)) - done
        if due > 0:
            cupti.fake_launch(due, buf)
            done += due
        time.sleep(0.001)
    return done


def nvtx_init() -> str:
    """What NVTX does at its first call: load the library ``NVTX_INJECTION64_PATH``
    names and call its ``InitializeInjectionNvtx2``; the path, or ``-``."""
    path = os.environ.get("NVTX_INJECTION64_PATH")
    if path:
        ctypes.CDLL(path).InitializeInjectionNvtx2(None)
    return path or "-"


if sys.argv[1:2] == ["--run"]:
    rate, seconds = float(sys.argv[2]), float(sys.argv[3])
    cuda.cuInit(0)
    time.sleep(0.5)  # let the agent start tracing
    end = time.monotonic() + seconds
    if len(sys.argv) < 5:
        paced(rate, b"_Z6saxpyifPfS_", lambda: time.monotonic() >= end)
        sys.exit(0)
    step_s, steps = float(sys.argv[4]) / 1e3, 0  # steps of STEP_MS, each an NVTX range
    nvtx_init()
    step = ctypes.create_string_buffer(b"train_step")
    t0 = time.monotonic()
    while time.monotonic() < end:
        cupti.fake_range_push(step)
        due = t0 + (steps + 1) * step_s
        paced(rate, b"_Z6saxpyifPfS_", lambda due=due: time.monotonic() >= due)
        cupti.fake_range_pop()
        steps += 1
    print(json.dumps({"steps": steps, "steps_per_s": steps / (time.monotonic() - t0)}))
    sys.exit(0)

print("ready", flush=True)
running = threading.Event()
launcher = None
count = [0]
for line in stdin_lines.lines():
    cmd = line.split()
    if cmd[0] == "init":
        cuda.cuInit(0)
        print("ok", flush=True)
    elif cmd[0] == "launch":
        name = names.setdefault(cmd[2], ctypes.create_string_buffer(cmd[2].encode()))
        t0 = time.monotonic_ns()
        cupti.fake_launch(int(cmd[1]), name)
        print("launched", t0, time.monotonic_ns(), flush=True)
    elif cmd[0] == "start":
        running.set()
        rate, name = float(cmd[1]), cmd[2].encode()

        def run(rate=rate, name=name):
            count[0] = paced(rate, name, lambda: not running.is_set())

        launcher = threading.Thread(target=run)
        launcher.start()
        print("started", flush=True)
    elif cmd[0] == "stop":
        running.clear()
        launcher.join()
        print("stopped", count[0], flush=True)
    elif cmd[0] == "who":
        print("who", launcher.native_id if launcher else 0, cupti.fake_finalized_by(), flush=True)
    elif cmd[0] == "mask":
        print("mask", cupti.fake_enabled_mask(), flush=True)
    elif cmd[0] == "nvtx":
        print("nvtx", nvtx_init(), flush=True)
    elif cmd[0] == "ranges":
        name = names.setdefault(cmd[3], ctypes.create_string_buffer(cmd[3].encode()))
        t0 = time.monotonic_ns()
        pause = float(cmd[2]) / 1e3
        for _ in range(int(cmd[1])):
            cupti.fake_range_push(name)
            if pause:
                time.sleep(pause)
            cupti.fake_range_pop()
        print("ranged", t0, time.monotonic_ns(), flush=True)
    elif cmd[0] == "exit":
        break
