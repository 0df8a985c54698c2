"""Drops on the status line, in words: issue 23 saw ``probe_block_sched (history cap)
1,129,344``, which said neither what was lost nor whether it mattered."""

from __future__ import annotations

import numpy as np

from gtop.core.hub import Update
from gtop.core.model import Model
from gtop.probes.record_streams import SPECS
from gtop.views.widgets.status_line import drop_text


def test_history_cap_and_probe_drops_read_as_words() -> None:
    model = Model(max_rows=10)
    rows = np.zeros(25, dtype=SPECS["block_sched"].dtype)
    rows["t_ns"] = np.arange(25)
    model.apply(Update(batches={"probe_block_sched": rows}), 100)
    ((name, n),) = model.drops().items()
    assert drop_text(name, n) == (
        "15 older block_sched probe records let go (the view's memory cap; gtop record keeps all)"
    )
    assert drop_text("probe_mem_trace", 1200) == "1,200 mem_trace probe records past its buffer"
    assert drop_text("cupti", 5) == "cupti 5"
