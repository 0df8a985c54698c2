"""Test target: a main thread at one of the places a safe-point injection must handle.

argv[1]: ``alloc`` (allocating in a loop, and a second thread allocating too, until a
second after the queued code ran or argv[2] seconds), ``read``
(blocked in ``read`` on stdin, with the GIL released), ``sleep`` (``time.sleep(1.5)``
calls, each one's length printed), ``held`` (blocked in a lock without a timeout, which
never returns to the interpreter until stdin says ``go``).
"""

import os
import sys
import threading
import time

mode = sys.argv[1]


def churn() -> None:
    while True:
        _ = [bytearray(64) for _ in range(200)]


print("ready", flush=True)
if mode == "alloc":
    # until a second after the queued code ran (it sets ``sys.gtop_ran``), argv[2] seconds
    # at most: when the attach comes depends on the machine's load, not on this loop
    threading.Thread(target=churn, daemon=True).start()
    limit = end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        _ = {i: str(i) * 3 for i in range(300)}
        if end == limit and hasattr(sys, "gtop_ran"):
            end = time.monotonic() + 1.0
elif mode == "read":
    data = os.read(0, 100)
    print("read", data.decode().strip(), flush=True)
elif mode == "sleep":
    for _ in range(3):
        t0 = time.monotonic()
        time.sleep(1.5)
        print(f"slept {time.monotonic() - t0:.3f}", flush=True)
elif mode == "held":
    lock = threading.Lock()
    lock.acquire()
    threading.Thread(target=lambda: (sys.stdin.readline(), lock.release()), daemon=True).start()
    lock.acquire()  # no timeout: never back in the interpreter until released
    print("released", flush=True)
    time.sleep(0.5)
print("done", flush=True)
