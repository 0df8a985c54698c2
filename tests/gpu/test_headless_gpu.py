"""`gtop --once`, `gtop --version` and `gtop serve` on a real GPU (pytest -m gpu).

Set GTOP_EVIDENCE=DIR to keep what was printed and scraped (the GPU session's
``eco-headless`` step does, for benchmarks/RESULTS.md).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]


def gtop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *args], capture_output=True, text=True, timeout=120
    )


def keep(name: str, text: str) -> None:
    folder = os.environ.get("GTOP_EVIDENCE")
    if folder:
        Path(folder, name).write_text(text)


def test_version_finds_the_driver() -> None:
    out = gtop("--version").stdout
    keep("version.txt", out)
    lines = dict(line.split(": ", 1) for line in out.splitlines()[1:])
    assert re.match(r"\d+\.\d+", lines["NVIDIA driver"]), out
    assert re.match(r"1\d\.\d+ \(libcuda", lines["CUDA driver API"]), out


def test_once_json_shows_every_gpu() -> None:
    import pynvml

    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    result = gtop("--once", "--json")
    assert result.returncode == 0, result.stderr
    keep("once.json", result.stdout)
    keep("once.txt", gtop("--once").stdout)
    frame = json.loads(result.stdout)
    assert [g["index"] for g in frame["gpus"]] == list(range(count))
    for gpu in frame["gpus"]:
        assert gpu["name"].startswith("NVIDIA") and gpu["mem_total_bytes"] > 1 << 30
        assert 0 <= gpu["util_gpu_pct"] <= 100 and gpu["power_w"] > 0


def test_serve_a_busy_process_with_the_agent() -> None:
    """bf16 matmuls for 25 s, attached with `gtop serve --pid`: dcgm-exporter's gauges for
    the GPU, and gtop's per-process GAR near 1 with kernels counted."""
    workload = REPO / "benchmarks" / "workloads" / "matmul_phases.py"
    target = subprocess.Popen(
        [sys.executable, str(workload), "--idle-s", "0", "--busy-s", "25"],
        stdout=subprocess.PIPE,
        text=True,
    )
    server = None
    try:
        assert target.stdout is not None and target.stdout.readline().strip() == "READY"
        cmd = [sys.executable, "-m", "gtop", "serve", "--port", "0", "--pid", str(target.pid)]
        server = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        assert server.stderr is not None
        found = None
        for _ in range(5):  # agent messages may come first; the address is the readiness
            found = re.search(r"(http://\S+)", server.stderr.readline())
            if found:
                break
        assert found, "gtop serve printed no address"
        url = found.group(1)
        time.sleep(14)  # a whole 10 s window after the attach, plus the 1 s lag
        body = urllib.request.urlopen(url, timeout=30).read().decode()
        keep("metrics.txt", body)
    finally:
        if server is not None:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
        target.kill()
        target.wait()
    families = {f.name: f for f in text_string_to_metric_families(body)}
    utils = families["DCGM_FI_DEV_GPU_UTIL"].samples
    assert utils and all(0 <= s.value <= 100 for s in utils)
    assert max(s.value for s in utils) > 50
    pid = str(target.pid)
    gar = [s.value for s in families["gtop_gpu_active_ratio"].samples if s.labels["pid"] == pid]
    assert gar and max(gar) > 0.8, gar
    kernels = [s.value for s in families["gtop_kernels"].samples if s.labels["pid"] == pid]
    assert kernels and kernels[0] > 100
