"""Publishes numbered kernel-layout rows through a hub into a Recorder until killed.

argv: OUTPUT.gtop. Prints READY once the first rows are committed.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from gtop.core import layouts
from gtop.core.hub import Hub
from gtop.recordings.recorder import FLUSH_INTERVAL_S, Recorder

hub = Hub()
recorder = Recorder(hub, sys.argv[1], {"host": "busy_writer"}).start()
seq = 0
started = time.monotonic()
announced = False
while True:
    rows = layouts.KERNEL.empty(100)
    rows["t_ns"] = time.monotonic_ns()
    rows["correlation"] = np.arange(seq, seq + 100)
    seq += 100
    hub.publish("kernel", rows)
    time.sleep(0.005)
    if not announced and recorder.rows() > 0:
        print("READY", flush=True)
        announced = True
    if not announced and time.monotonic() - started > 30:
        sys.exit(f"nothing committed in 30 s (flush period {FLUSH_INTERVAL_S} s)")
