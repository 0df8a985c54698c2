"""Batch-1 greedy decoding of a small transformer: a launch-bound GPU loop.

Every token runs one decode step (embedding, ``--layers`` blocks of attention over a
static KV cache and an MLP, the output projection, argmax) as ~15 small kernels per
layer, all launched from Python; the GPU finishes each faster than the host launches the
next, so gtop should find the off-GPU time on the host side, in the launch path: H:CTRL,
the CUDA calls and the framework's per-op dispatch between them (launch gaps).
``--graphs`` captures the step in a CUDA Graph and replays it (one launch per token):
GAR must rise and the host share must fall.

Shapes are static (the cache is preallocated, attention is masked by position), so the
same step runs eagerly and under capture. Prints one JSON line at the end.

Run under gtop, e.g. (from the repository root)::

    gtop record -o recordings/decode-eager.gtop -- python benchmarks/workloads/decode_loop.py
    gtop record -o recordings/decode-graphs.gtop -- \\
        python benchmarks/workloads/decode_loop.py --graphs
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import torch
from _common import emit, now_ns
from torch import nn


class TinyDecoder(nn.Module):
    """A GPT-style decoder with a static KV cache of ``max_len`` positions."""

    def __init__(self, vocab: int, d: int, layers: int, heads: int, max_len: int) -> None:
        super().__init__()
        self.heads, self.dh, self.max_len = heads, d // heads, max_len
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.qkv = nn.ModuleList(nn.Linear(d, 3 * d) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
        self.up = nn.ModuleList(nn.Linear(d, 4 * d) for _ in range(layers))
        self.down = nn.ModuleList(nn.Linear(4 * d, d) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        shape = (layers, heads, max_len, self.dh)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))
        self.register_buffer("slots", torch.arange(max_len))

    @torch.no_grad()
    def step(self, tok: torch.Tensor, pos: torch.Tensor) -> None:
        """Decode one token in place: ``tok`` becomes the next token, ``pos`` advances."""
        x = self.emb(tok) + self.pos(pos)  # [1, d]
        hidden = self.slots > pos  # positions not written yet
        for i in range(len(self.qkv)):
            q, k, v = self.qkv[i](self.ln1[i](x)).view(3, self.heads, 1, self.dh)
            self.k_cache[i].index_copy_(1, pos, k)
            self.v_cache[i].index_copy_(1, pos, v)
            scores = (q @ self.k_cache[i].transpose(-1, -2)) / math.sqrt(self.dh)
            attn = scores.masked_fill(hidden, float("-inf")).softmax(-1)
            x = x + self.out[i]((attn @ self.v_cache[i]).reshape(1, -1))
            x = x + self.down[i](torch.nn.functional.gelu(self.up[i](self.ln2[i](x))))
        logits = self.ln_f(x) @ self.emb.weight.T
        tok.copy_(logits.argmax(-1))
        pos.add_(1)


def add_model_args(ap: argparse.ArgumentParser) -> None:
    """The decoder's size options (``--layers``, ``--d-model``, ``--max-len``)."""
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--max-len", type=int, default=256)


def build(args: argparse.Namespace) -> tuple[TinyDecoder, torch.Tensor, torch.Tensor]:
    """The seeded decoder sized by :func:`add_model_args`'s options, on the GPU in eval
    mode, with its token and position tensors (both ``[0]``)."""
    torch.manual_seed(0)
    model = TinyDecoder(8192, args.d_model, args.layers, 8, args.max_len).cuda().eval()
    tok = torch.zeros(1, dtype=torch.long, device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    return model, tok, pos


def graph_step(model: TinyDecoder, tok: torch.Tensor, pos: torch.Tensor) -> Callable[[], None]:
    """The decode step captured once in a CUDA Graph: its replay (one launch per token)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as capture needs
        for _ in range(3):
            model.step(tok, pos)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model.step(tok, pos)
    return graph.replay


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", action="store_true", help="replay the step as a CUDA Graph")
    ap.add_argument("--seconds", type=float, default=20.0)
    add_model_args(ap)
    args = ap.parse_args()

    model, tok, pos = build(args)
    step = graph_step(model, tok, pos) if args.graphs else lambda: model.step(tok, pos)

    per_sequence = args.max_len - 1
    tokens = 0
    torch.cuda.synchronize()
    t0, started = now_ns(), time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        pos.zero_()
        for _ in range(per_sequence):
            step()
        tokens += per_sequence
    torch.cuda.synchronize()
    t1 = now_ns()
    emit(
        "decode-graphs" if args.graphs else "decode-eager",
        (t0, t1),
        {
            "launch_bound": not args.graphs,
            "cause": "host launch path: H:CTRL (calls and per-op dispatch between them)",
            "fix": "--graphs: GAR up, H:CTRL down",
        },
        tokens_per_s=tokens / ((t1 - t0) / 1e9),
        layers=args.layers,
        d_model=args.d_model,
    )


if __name__ == "__main__":
    main()
