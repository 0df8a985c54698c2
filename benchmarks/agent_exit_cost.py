"""What the agent adds to a short Python process's start and exit (issue 14, item 7).

    PYTHONPATH=$PWD python3 benchmarks/agent_exit_cost.py [--runs 30] [--cuda]

``python -c pass`` is run bare and under gtop's launch environment (the agent loads at
startup, connects, and at exit reports and disconnects: what every process of
``gtop run -- CMD`` pays, CUDA or not), interleaved, ``--runs`` times each. Wall time per
run: median and 90th percentile, and the median's excess over bare. A CPU-only process
never starts CUPTI, so what remains is the import, the connect and the goodbye.
``--cuda`` runs a one-kernel torch program instead: the agent then starts CUPTI, and at
exit flushes, delivers and finalises it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

CUDA_CODE = "import torch; torch.ones(8, device='cuda').add_(1); torch.cuda.synchronize()"


def once(code: str, env: dict[str, str] | None) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--cuda", action="store_true", help="a one-kernel torch program")
    args = ap.parse_args()
    code = CUDA_CODE if args.cuda else "pass"
    link = AgentLink(Hub()).start()
    try:
        modes = {"bare": None, "agent (gtop run)": link.launch_env()}
        times: dict[str, list[float]] = {m: [] for m in modes}
        for _ in range(args.runs):
            for mode, env in modes.items():
                times[mode].append(once(code, env))
        exited = sum(st.state == "exited" for st in link.status().values())
    finally:
        link.stop()
    bare = statistics.median(times["bare"])
    print(f"python -c {code!r}, {args.runs} runs each ({sys.version.split()[0]})")
    print(f"{'mode':<18} {'median ms':>10} {'p90 ms':>8} {'excess ms':>10}")
    for mode, ts in times.items():
        med, p90 = statistics.median(ts), statistics.quantiles(ts, n=10)[-1]
        print(f"{mode:<18} {med * 1e3:>10.1f} {p90 * 1e3:>8.1f} {(med - bare) * 1e3:>10.1f}")
    print(f"agents that said goodbye (state 'exited'): {exited}/{args.runs}")


if __name__ == "__main__":
    main()
