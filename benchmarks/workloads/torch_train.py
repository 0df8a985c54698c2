"""A small GPT-style transformer training loop, for recordings and accuracy checks.

``--host-ms`` adds host work per step (a busy loop), so the GPU is idle part of the time
and utilization is neither 0 nor 100. Prints ``READY`` after the first step and
``STEPS n rate`` at the end.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int, heads: int, ctx: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(ctx, dim))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=idx.device), 1)
        x = self.tok(idx) + self.pos[:t]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--host-ms", type=float, default=0.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab, ctx = 4096, 256
    model = TinyGPT(vocab, 512, 6, 8, ctx).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = torch.randint(0, vocab, (args.batch, ctx + 1), device="cuda")
    steps, start = 0, time.monotonic()
    while time.monotonic() - start < args.seconds:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(data[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), data[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        if args.host_ms:
            until = time.perf_counter() + args.host_ms / 1e3
            while time.perf_counter() < until:
                pass
        steps += 1
        if steps == 1:
            print("READY", flush=True)
    print(f"STEPS {steps} {steps / (time.monotonic() - start):.1f}", flush=True)


if __name__ == "__main__":
    main()
