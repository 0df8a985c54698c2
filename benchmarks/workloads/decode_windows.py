"""The launch-bound eager decode of ``decode_loop.py``, run for ``--seconds`` and timed
in windows (``--graphs``: the step replayed as a CUDA Graph, as ``decode_loop.py --graphs``
does): one JSON line per window, ``{"t0": ns, "t1": ns, "tok_s": rate}`` on
``CLOCK_MONOTONIC`` (the same clock in every process of the machine), the GPU
synchronised at both ends of each window. ``attach_paired.py`` attaches gtop to it for
some windows and not others."""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch
from decode_loop import add_model_args, build, graph_step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--window", type=float, default=0.5)
    ap.add_argument("--graphs", action="store_true", help="replay the step as a CUDA Graph")
    add_model_args(ap)
    args = ap.parse_args()
    model, tok, pos = build(args)
    step = graph_step(model, tok, pos) if args.graphs else lambda: model.step(tok, pos)
    per_sequence = args.max_len - 1
    end = time.monotonic() + args.seconds
    done = 0
    while time.monotonic() < end:
        torch.cuda.synchronize()
        t0 = time.monotonic_ns()
        tokens = 0
        while time.monotonic_ns() - t0 < args.window * 1e9:
            for _ in range(16):
                if done % per_sequence == 0:
                    pos.zero_()
                step()
                done += 1
            tokens += 16
        torch.cuda.synchronize()
        t1 = time.monotonic_ns()
        print(json.dumps({"t0": t0, "t1": t1, "tok_s": tokens / ((t1 - t0) / 1e9)}), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
