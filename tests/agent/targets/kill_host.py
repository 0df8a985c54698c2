"""Test helper: a gtop stand-in that attaches to a pid, says so, then waits to be killed."""

import sys
import time

from gtop.collectors.agent.attach import attach
from gtop.collectors.agent.link import AgentLink
from gtop.core.hub import Hub

link = AgentLink(Hub()).start()
attach(int(sys.argv[1]), link)
link.wait(int(sys.argv[1]), ("tracing",), 10)
print("attached", link.status()[int(sys.argv[1])].state, flush=True)
time.sleep(600)
