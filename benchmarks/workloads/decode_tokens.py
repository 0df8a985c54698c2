"""Launch-bound workload: batch-1 greedy token decoding of a small transformer, eager.

``python benchmarks/workloads/decode_tokens.py --seconds 5`` (see common.py for the
output protocol). One step decodes one token with ``decode_loop.TinyDecoder`` (8 layers
of d=512 by default: ~130 small kernels per token, all launched from Python, the GPU
finishing each faster than the host launches the next; well over 20k kernels/s on an
H200). The KV cache is static: every ``--max-len`` - 1 tokens the position is reset
(one extra kernel), so sequences never end.
"""

from __future__ import annotations

from common import parser, run
from decode_loop import add_model_args, build


def main() -> None:
    p = parser(__doc__)
    add_model_args(p)
    args = p.parse_args()
    model, tok, pos = build(args)
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
