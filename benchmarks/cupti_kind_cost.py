"""What each CUPTI activity kind costs a launch-bound loop, measured inside one process.

    PYTHONPATH=$PWD python3 benchmarks/cupti_kind_cost.py [--rounds 6] [--window 1.5]
        [--json OUT.json]

Launch-bound decode rates differ by ~35% between fresh processes on the GPU machine
(``overhead_matrix.py``'s untraced rounds), which hides a 5% cost. Here one process runs
the batch-1 eager decode step of ``workloads/decode_loop.py`` and switches CUPTI's
activity kinds between windows of ``--window`` seconds (configurations in an order that
alternates between rounds), through gtop's own CUPTI binding and buffer pool, with a
thread that flushes and recycles buffers as the agent does. Each configuration's rate is
the median of its windows, relative to the windows with every kind disabled (CUPTI
subscribed, as under gtop when nothing is traced), and the median of each window's ratio
to the disabled window of its own round ("paired"). Prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "workloads"))

import torch  # noqa: E402
from decode_loop import add_model_args, build  # noqa: E402

from gtop.agent.buffers import BufferPool  # noqa: E402
from gtop.agent.cupti import KIND_BY_NAME, Cupti, SubscriberCallback, load  # noqa: E402
from gtop.agent.modes import KINDS, MODES  # noqa: E402

CONFIGS = {
    "off": (),
    "kernel": ("kernel",),
    "kernel+sync": ("kernel", "sync"),
    "default": MODES["default"],
    "graph-nodes": MODES["graph-nodes"],
    "full": MODES["full"],
}


def rate(step, seconds: float, per_sequence: int, pos: torch.Tensor) -> float:
    """Tokens/s of the decode step over ``seconds`` (GPU synchronised at both ends)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    tokens = 0
    while time.perf_counter() - t0 < seconds:
        pos.zero_()
        for _ in range(per_sequence):
            step()
        tokens += per_sequence
    torch.cuda.synchronize()
    return tokens / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--window", type=float, default=1.5, help="seconds per configuration")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--json", type=Path)
    add_model_args(ap)
    args = ap.parse_args()
    names = args.configs.split(",")
    model, tok, pos = build(args)
    step = lambda: model.step(tok, pos)  # noqa: E731
    per_sequence = args.max_len - 1
    rate(step, 1.0, per_sequence, pos)  # warm-up, before CUPTI

    cupti = Cupti(*load())
    pool = BufferPool(cupti, 1 << 20, 32)
    keep = SubscriberCallback(lambda *a: None)
    cupti.subscribe(keep)
    cupti.register_callbacks(pool.requested_cb, pool.completed_cb)
    cupti.set_zeroed_buffers()
    cupti.system_thread_ids()
    cupti.latency_timestamps(False)
    stop = threading.Event()
    records = [0]

    def recycle() -> None:  # the agent's loop, minus shipping to gtop
        while not stop.wait(0.25):
            cupti.flush()
            for item in pool.completed():
                records[0] += item.valid
                pool.release(item)

    threading.Thread(target=recycle, daemon=True).start()
    rates: dict[str, list[float]] = {n: [] for n in names}
    enabled: list[int] = []
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            for kind in enabled:
                cupti.disable(kind)
            enabled = [KIND_BY_NAME[k] for k in sorted(CONFIGS[name], key=KINDS.index)]
            for kind in enabled:
                cupti.enable(kind)
            rates[name].append(rate(step, args.window, per_sequence, pos))
            print(f"round {r} {name:12s} {rates[name][-1]:8.1f} tok/s", flush=True)
    stop.set()
    base = median(rates["off"]) if rates.get("off") else None
    print(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}\n")
    print("| kinds | tok/s (median) | vs off | paired vs off | spread | windows |")
    print("|---|---|---|---|---|---|")
    for name, values in rates.items():
        med = median(values)
        spread = (max(values) - min(values)) / med
        rel = f"{med / base:.3f}" if base else "-"
        # each window against the "off" window of its own round: slow drift cancels
        paired = f"{median(v / o for v, o in zip(values, rates['off'])):.3f}" if base else "-"
        print(f"| {name} | {med:.1f} | {rel} | {paired} | {spread:.1%} | {len(values)} |")
    if args.json:
        args.json.write_text(json.dumps({"rates": rates, "configs": CONFIGS}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
