"""What ``gtop serve`` exports for a replayed recording, read back with
prometheus_client's own parser."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def scrape(
    path: Path, at_s: float, gtop: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> dict[str, Any]:
    """The metric families of ``path`` replayed to ``at_s`` seconds, by name; the server
    must exit cleanly on SIGTERM. ``gtop``: the command to run (default this tree's), in
    ``env`` (default this one)."""
    gtop = gtop or (sys.executable, "-m", "gtop")
    cmd = [*gtop, "serve", "--port", "0", "--replay", str(path)]
    server = subprocess.Popen([*cmd, "--at", str(at_s)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()  # the readiness signal: the address it serves
        url = re.search(r"(http://\S+/metrics)", line)
        assert url, line
        body = urllib.request.urlopen(url.group(1), timeout=30).read().decode()
        return {f.name: f for f in text_string_to_metric_families(body)}
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
