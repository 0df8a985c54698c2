"""Target: forks one child that loops in Python, prints ``ready`` then the child's pid,
then idles until stdin closes (the child is killed with it). A test that kills this
process leaves the child to see its parent gone and exit, not loop on for ever."""

import os
import sys
import time

parent = os.getpid()
child = os.fork()
if child == 0:
    while os.getppid() == parent:
        time.sleep(0.05)
    os._exit(0)
print("ready", flush=True)
print(child, flush=True)
sys.stdin.read()
os.kill(child, 9)
os.waitpid(child, 0)
