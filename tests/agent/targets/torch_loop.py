"""GPU test target: a small torch loop (matmul, relu, add per step) run from stdin commands.

``steps N`` runs N steps and answers ``done T0 T1`` (CLOCK_MONOTONIC ns around them, the
GPU synchronised at both ends); ``graphs N`` replays the step N times as a CUDA graph
(captured on first use) and answers the same; ``spin S`` runs steps for S seconds in
the background of the command loop and answers ``spun STEPS_PER_S``; ``profile`` starts
torch.profiler and answers ``profiling``; ``exit`` leaves. Prints ``ready`` once CUDA is warm.
"""

import time

import stdin_lines  # beside this file
import torch

a = torch.randn(256, 256, device="cuda")
b = torch.randn(256, 256, device="cuda")


def step() -> None:
    c = torch.relu(a @ b)
    c.add_(1.0)


for _ in range(3):
    step()
torch.cuda.synchronize()
print("ready", flush=True)
profiler = None
graph = None


def captured() -> torch.cuda.CUDAGraph:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as capture needs
        step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    return g


for line in stdin_lines.lines():
    cmd = line.split()
    if cmd[0] == "steps":
        torch.cuda.synchronize()
        t0 = time.monotonic_ns()
        for _ in range(int(cmd[1])):
            step()
        torch.cuda.synchronize()
        print("done", t0, time.monotonic_ns(), flush=True)
    elif cmd[0] == "graphs":
        graph = graph or captured()
        torch.cuda.synchronize()
        t0 = time.monotonic_ns()
        for _ in range(int(cmd[1])):
            graph.replay()
        torch.cuda.synchronize()
        print("done", t0, time.monotonic_ns(), flush=True)
    elif cmd[0] == "spin":
        n, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < float(cmd[1]):
            step()
            n += 1
        torch.cuda.synchronize()
        print("spun", n / (time.monotonic() - t0), flush=True)
    elif cmd[0] == "profile":
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        profiler.__enter__()
        print("profiling", flush=True)
    elif cmd[0] == "exit":
        break
