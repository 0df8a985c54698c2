"""Test target: a CPU-only Python process that counts ticks until killed."""

import time

print("ready", flush=True)
ticks = 0
while True:
    time.sleep(0.005)
    ticks += 1
    if ticks % 20 == 0:
        print("tick", ticks, flush=True)
