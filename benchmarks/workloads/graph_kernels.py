"""Accounting workload: an exactly known number of kernels, at well over 100k kernels/s.

``python benchmarks/workloads/graph_kernels.py --nodes 1000 --replays 300 --wait-go``

CUDA is initialised without launching anything, ``ready`` is printed and (with
``--wait-go``) the workload waits for ``go`` on stdin; only then is any kernel launched,
so a tracer enabled before ``go`` sees every one. A CUDA graph of ``--nodes`` tiny
kernels (in-place adds) is captured and replayed: CUPTI emits one kernel record per graph
node, and a replay costs one launch call, so the GPU, not the host, sets the rate.

``result`` line: ``kernels`` = every kernel launched after ``go`` (one eager pass, the
warm-up replays and the measured replays); ``steps``/``seconds`` and
``kernels_per_s`` cover the measured replays only (GPU synchronised at both ends).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from common import say

WARM_REPLAYS = 2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nodes", type=int, default=1000, help="kernels per graph")
    p.add_argument("--replays", type=int, default=300, help="measured replays")
    p.add_argument("--size", type=int, default=256, help="elements per tensor")
    p.add_argument("--wait-go", action="store_true", help="wait for 'go' on stdin")
    args = p.parse_args()
    torch.cuda.init()
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
    graph = torch.cuda.CUDAGraph()
    # captured, not run: no kernel records. thread_local: the agent's thread may call
    # CUPTI (flushes) while this thread captures
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
            "t0_ns": t0,
            "t1_ns": t1,
        },
    )


if __name__ == "__main__":
    main()
