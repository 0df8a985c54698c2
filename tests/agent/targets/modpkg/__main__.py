"""Test target run as ``python -m modpkg``: reports whether the agent module is loaded."""

import sys

import stdin_lines  # tests/agent/targets, on PYTHONPATH

print("ready", flush=True)
for line in stdin_lines.lines():
    if line.strip() == "agent?":
        # the agent lives under a private package name, never as "gtop"
        agent = any(m.startswith("_gtop_") and m.endswith(".agent.runtime") for m in sys.modules)
        print("agent", agent and "gtop" not in sys.modules, flush=True)
    elif line.strip() == "path?":
        print("path", any("gtop-agent-" in p for p in sys.path), flush=True)
    elif line.strip() == "kept?":  # the code of both sitecustomize modules, still alive
        boot = next(m for n, m in sys.modules.items() if n.endswith(".agent.bootstrap"))
        names = sorted(c.co_filename.rpartition("/")[0].rpartition("/")[2] for c in boot._KEPT)
        print("kept", *names, flush=True)
    elif line.strip() == "custom?":
        print("custom", getattr(sys, "user_sitecustomize_ran", False), flush=True)
    elif line.strip() == "exit":
        break
