"""Target: forks one child that loops in Python, prints ``ready`` then the child's pid,
then idles until stdin closes (the child is killed with it)."""

import os
import sys
import time

child = os.fork()
if child == 0:
    while True:
        time.sleep(0.05)
print("ready", flush=True)
print(child, flush=True)
sys.stdin.read()
os.kill(child, 9)
os.waitpid(child, 0)
