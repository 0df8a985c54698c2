from __future__ import annotations

import subprocess
import sys
import time

from gtop.collectors.host import HostCollector, family
from gtop.pipeline.hub import Hub


def test_host_collector_follows_a_real_process_and_its_exit() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess,sys,time;"
            "p=subprocess.Popen([sys.executable,'-c','import time;time.sleep(30)']);"
            "print(p.pid,flush=True);time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        grandchild = int(child.stdout.readline())
        assert set(family(child.pid)) == {child.pid, grandchild}
        hub = Hub()
        sub = hub.subscribe()
        collector = HostCollector(hub, 0.1, lambda: family(child.pid) or [child.pid])
        collector.poll()
        first = sub.poll()
        assert sorted(first.batches["proc_host"]["pid"]) == sorted([child.pid, grandchild])
        names = {e.key: e.value for e in first.entities if e.kind == "process"}
        assert names[str(child.pid)]["cmdline"][0] == sys.executable
        child.kill()
        child.wait()
        time.sleep(0.1)
        collector.poll()
        later = sub.poll()
        exits = [e for e in later.entities if e.value.get("exited")]
        assert [e.key for e in exits] == [str(child.pid)]
    finally:
        child.kill()
        subprocess.run(["pkill", "-f", "time.sleep\\(30\\)"], check=False)
