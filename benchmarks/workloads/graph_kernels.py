"""Accounting workload: an exactly known number of kernels, at well over 100k kernels/s.

``python benchmarks/workloads/graph_kernels.py --nodes 1000 --replays 300 --wait-go``

CUDA is initialised without launching anything, ``ready`` is printed and (with
``--wait-go``) the workload waits for ``go`` on stdin; only then is any kernel launched,
so a tracer enabled before ``go`` sees every one. A CUDA graph of ``--nodes`` tiny
kernels (in-place adds) is captured and replayed: CUPTI emits one kernel record per graph
node, and a replay costs one launch call, so the GPU, not the host, sets the rate.

The graph is captured with the driver API (``cuStreamBeginCapture`` on a side stream),
not ``torch.cuda.graph``: torch's capture launches two kernels of its own before
capturing (``CUDAGeneratorState::capture_prologue`` fills the RNG seed and offset
tensors of the default generator), which this workload could not count (the second H200
run: CUPTI and gtop agreed on 303,002 records, this count said 303,000). Capturing
launches nothing, so every kernel launched after ``go`` is one the workload counts.

``result`` line: ``kernels`` = every kernel launched after ``go`` (one eager pass, the
warm-up replays and the measured replays); ``steps``/``seconds`` and
``kernels_per_s`` cover the measured replays only (GPU synchronised at both ends).
"""

from __future__ import annotations

import argparse
import ctypes
import sys
import time

import torch
from common import say

WARM_REPLAYS = 2
CAPTURE_MODE_THREAD_LOCAL = 1
"""CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: the agent's thread may call CUPTI (flushes)
while this thread captures."""


class DriverGraph:
    """A CUDA graph captured from the work ``body`` launches on ``stream``, through the
    driver API, and replayed with ``cuGraphLaunch``."""

    def __init__(self, stream: torch.cuda.Stream, body: object) -> None:
        cuda = ctypes.CDLL("libcuda.so.1")
        self._cuda = cuda
        self._stream = ctypes.c_void_p(stream.cuda_stream)
        graph, exe = ctypes.c_void_p(), ctypes.c_void_p()
        self._check("cuStreamBeginCapture_v2", self._stream, CAPTURE_MODE_THREAD_LOCAL)
        try:
            with torch.cuda.stream(stream):
                body()
        finally:  # end the capture even when the body failed
            end = cuda.cuStreamEndCapture(self._stream, ctypes.byref(graph))
        if end != 0:
            raise RuntimeError(f"cuStreamEndCapture failed: CUresult {end}")
        self._check("cuGraphInstantiateWithFlags", ctypes.byref(exe), graph, ctypes.c_ulonglong(0))
        self._graph, self._exe = graph, exe
        self._launch = cuda.cuGraphLaunch
        self._launch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]

    def _check(self, name: str, *args: object) -> None:
        rc = getattr(self._cuda, name)(*args)
        if rc != 0:
            raise RuntimeError(f"{name} failed: CUresult {rc}")

    def replay(self) -> None:
        rc = self._launch(self._exe, self._stream)
        if rc != 0:
            raise RuntimeError(f"cuGraphLaunch failed: CUresult {rc}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nodes", type=int, default=1000, help="kernels per graph")
    p.add_argument("--replays", type=int, default=300, help="measured replays")
    p.add_argument("--size", type=int, default=256, help="elements per tensor")
    p.add_argument("--wait-go", action="store_true", help="wait for 'go' on stdin")
    args = p.parse_args()
    torch.cuda.init()
    side = torch.cuda.Stream()  # capture needs a stream other than the legacy default
    torch.cuda.synchronize()  # a context, and no kernel yet
    say("ready")
    if args.wait_go:
        sys.stdin.readline()
    x = torch.empty(args.size, device="cuda")  # an allocation: no kernel

    def body() -> None:
        for _ in range(args.nodes):
            x.add_(1.0)  # exactly one kernel each

    body()  # eager pass: initialises whatever torch initialises lazily
    torch.cuda.synchronize()
    capture = "driver API (cuStreamBeginCapture): launches nothing"
    try:
        graph = DriverGraph(side, body)  # captured, not run: no kernel records
    except (OSError, AttributeError, RuntimeError) as exc:
        # torch's capture works everywhere but launches kernels this count misses: say so
        capture = (
            f"torch.cuda.graph, because the driver-API capture failed ({exc}): its two "
            "RNG-state fill kernels are not counted"
        )
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            body()
    for _ in range(WARM_REPLAYS):
        graph.replay()
    torch.cuda.synchronize()
    t0 = time.monotonic_ns()
    for _ in range(args.replays):
        graph.replay()
    torch.cuda.synchronize()
    t1 = time.monotonic_ns()
    measured = args.replays * args.nodes
    say(
        "result",
        {
            "steps": args.replays,
            "seconds": (t1 - t0) / 1e9,
            "steps_per_s": args.replays * 1e9 / (t1 - t0),
            "kernels": (1 + WARM_REPLAYS + args.replays) * args.nodes,
            "measured_kernels": measured,
            "kernels_per_s": measured * 1e9 / (t1 - t0),
            "capture": capture,
            "t0_ns": t0,
            "t1_ns": t1,
        },
    )


if __name__ == "__main__":
    main()
