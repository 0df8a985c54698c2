"""Launch-bound workload: batch-1 greedy token decoding of a small transformer, eager.

``python benchmarks/workloads/decode_tokens.py --seconds 5`` (see common.py for the
output protocol). One step decodes one token with ``decode_loop.TinyDecoder`` (8 layers
of d=512 by default: ~130 small kernels per token, all launched from Python, the GPU
finishing each faster than the host launches the next; well over 20k kernels/s on an
H200). The KV cache is static: every ``--max-len`` - 1 tokens the position is reset
(one extra kernel), so sequences never end.
"""

from __future__ import annotations

import torch
from common import parser, run
from decode_loop import TinyDecoder


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--max-len", type=int, default=256)
    args = p.parse_args()
    torch.manual_seed(0)
    model = TinyDecoder(8192, args.d_model, args.layers, 8, args.max_len).cuda().eval()
    tok = torch.zeros(1, dtype=torch.long, device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    per_sequence = args.max_len - 1
    count = [0]

    def step() -> None:
        if count[0] == per_sequence:
            pos.zero_()
            count[0] = 0
        model.step(tok, pos)
        count[0] += 1

    run(args, step)


if __name__ == "__main__":
    main()
