"""Run a workload script under torch.profiler (CPU and CUDA activities), unchanged.

    python benchmarks/workloads/under_torch_profiler.py SCRIPT [ARGS...]

The profiler is on from before the script starts to its end; the process then exits at
once (``os._exit``), skipping the profiler's post-processing of the trace, which comes
after the workload has printed its result and would only lengthen the run.
"""

from __future__ import annotations

import os
import runpy
import sys

from torch.profiler import ProfilerActivity, profile


def main() -> None:
    script = os.path.abspath(sys.argv[1])
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(script))
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    prof.start()
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
