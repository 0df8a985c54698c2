"""block_sched: when and where each warp ran.

One record per warp (written at kernel exit by the lowest exiting lane): start and end on
``%globaltimer`` (GPU-wide ns), elapsed ``%clock64`` cycles, SM id, linear block id and
warp-in-block id. A warp whose lanes leave through different exits writes one record per
exit; :func:`warps` merges them.
"""

from __future__ import annotations

import numpy as np

from gtop.instrument import maps
from gtop.instrument.probe import ENTRY, EXIT, Level, MapKind, Probe, Site, Tracepoint

RECORD = np.dtype(
    [
        ("start_ns", "<u8"),
        ("end_ns", "<u8"),
        ("clocks", "<u8"),
        ("block", "<u4"),
        ("smid", "<u2"),
        ("warp", "u1"),
        ("kernel", "u1"),
    ]
)


def _entry(site: Site) -> str:
    return "mov.u64 %gtop_bs_t0, %globaltimer;\nmov.u64 %gtop_bs_c0, %clock64;\n"


def _exit(site: Site) -> str:
    return (
        "mov.u64 %gtop_bs_t1, %globaltimer;\n"
        "mov.u64 %gtop_bs_c1, %clock64;\n"
        "sub.u64 %gtop_bs_c1, %gtop_bs_c1, %gtop_bs_c0;\n"
        + maps.ids()
        + maps.writer(site.level)
        + maps.slot(site, RECORD)
        + f"mov.u32 %gtop_x, {site.kernel_id};\n"
        + maps.store(
            RECORD,
            {
                "start_ns": "%gtop_bs_t0",
                "end_ns": "%gtop_bs_t1",
                "clocks": "%gtop_bs_c1",
                "block": "%gtop_blk",
                "smid": "%gtop_smid",
                "warp": "%gtop_wid",
                "kernel": "%gtop_x",
            },
        )
    )


PROBE = Probe(
    name="block_sched",
    doc="per warp: start/end %globaltimer, elapsed %clock64, SM, block, warp",
    record=RECORD,
    registers={f"%gtop_bs_{n}": ".b64" for n in ("t0", "c0", "t1", "c1")},
    tracepoints=(Tracepoint(ENTRY, _entry), Tracepoint(EXIT, _exit)),
    levels=(Level.WARP, Level.THREAD),
    maps=(MapKind.RING, MapKind.ARRAY),
)
