"""Launch-bound workload: a loop of tiny elementwise kernels (well over 20k kernels/s).

Each step launches exactly ``--ops`` kernels (in-place adds on a small CUDA tensor), so
the result's ``kernels`` is the exact number launched in the measured region.
"""

from __future__ import annotations

import torch
from common import parser, run


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--ops", type=int, default=100, help="kernels per step")
    p.add_argument("--size", type=int, default=1024, help="elements per tensor")
    args = p.parse_args()
    x = torch.zeros(args.size, device="cuda")

    def step() -> None:
        for _ in range(args.ops):
            x.add_(1.0)

    run(args, step, kernels_per_step=args.ops)


if __name__ == "__main__":
    main()
