"""Read what the report needs from a recording, the kernel table digested chunk by chunk."""

from __future__ import annotations

import numpy as np

from gtop.analysis.cuda_activity import KernelStats
from gtop.analysis.records import OpsBuilder
from gtop.analysis.report import REPORT_STREAMS, KernelDigest
from gtop.recordings.reader import Recording


def read_report_data(rec: Recording) -> tuple[dict[str, np.ndarray], KernelDigest | None]:
    """The streams :func:`~gtop.analysis.report.build_report` reads; the kernel table as
    a digest when its chunks are in time order (one pass over reused memory), else as
    rows (the reader sorts them)."""
    data = {n: rec.read(n) for n in REPORT_STREAMS if n in rec.streams and n != "kernel"}
    if "kernel" not in rec.streams:
        return data, None
    stats = KernelStats()
    ops = OpsBuilder(sum(info.n for info in rec.chunks("kernel")), data)
    last = None
    for chunk in rec.iter_chunks("kernel", reuse=True):
        t = chunk["t_ns"]
        if (last is not None and t[0] < last) or bool(np.any(t[1:] < t[:-1])):
            data["kernel"] = rec.read("kernel")
            return data, None
        last = t[-1]
        stats.add(chunk)
        ops.add_kernels(chunk)
    return data, KernelDigest(stats, ops.finish())
