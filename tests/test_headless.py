"""`gtop --once`, non-terminal output and `gtop serve`, run as a user runs them, over the
real recordings (this machine has no GPU; the live NVML path is a GPU-session step)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gtop.cli.parser import parse_args
from gtop.recordings.reader import Recording
from tests.serve_metrics import scrape
from tests.test_cli import gtop, one_line_error

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"


def recorded_gpu_row(path: Path, at_s: float) -> np.void:
    """The recording's newest ``gpu`` sample at ``at_s`` seconds from its start."""
    with Recording(path) as rec:
        t0, _ = rec.time_range()
        rows = rec.read("gpu", t0, t0 + int(at_s * 1e9) + 1)
    return rows[-1]


def test_once_json_is_the_recorded_frame(idle_busy_idle: Path) -> None:
    result = gtop("replay", str(idle_busy_idle), "--at", "15", "--json")
    assert result.returncode == 0, result.stderr
    frame = json.loads(result.stdout)
    row = recorded_gpu_row(idle_busy_idle, 15)
    (gpu,) = frame["gpus"]
    assert gpu["name"] == "NVIDIA H200" and gpu["index"] == 0
    assert gpu["util_gpu_pct"] == pytest.approx(float(row["util_gpu"])) == 99.0
    assert gpu["mem_used_bytes"] == int(row["mem_used"])
    assert gpu["fan_pct"] is None  # the H200 has no fan: missing, not zero
    (proc,) = frame["processes"]
    assert proc["gpus"] == [0] and proc["gpu_mem_bytes"] > 1 << 30
    assert "workloads" in proc["command"]


def test_once_text_and_gpu_filter(idle_busy_idle: Path) -> None:
    text = gtop("replay", str(idle_busy_idle), "--once", "--at", "15").stdout
    assert re.search(r"GPU 0 NVIDIA H200\s+util 99%", text), text
    other = json.loads(gtop("replay", str(idle_busy_idle), "--json", "--gpus", "1").stdout)
    assert other["gpus"] == []
    assert all(p["gpus"] == [] for p in other["processes"])  # host rows stay


def test_stdout_not_a_terminal_prints_a_frame_not_the_ui(idle_busy_idle: Path) -> None:
    result = gtop("replay", str(idle_busy_idle))  # stdout is a pipe
    assert result.returncode == 0
    assert result.stderr.strip() == "gtop: stdout is not a terminal: one frame as text (as --once)"
    assert "GPU 0 NVIDIA H200" in result.stdout and "\x1b[" not in result.stdout
    assert "needs a terminal" in one_line_error(gtop("run", "--", "true"))


def test_live_once_without_gpu() -> None:
    assert "gtop demo" in one_line_error(gtop("--once"))
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        result = gtop("--once", "--json", "--no-agent", "--pid", str(target.pid))
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    frame = json.loads(result.stdout)
    (proc,) = [p for p in frame["processes"] if p["pid"] == target.pid]
    assert proc["threads"] >= 1 and proc["rss_bytes"] > 1 << 20 and proc["gpus"] == []


def test_version_names_each_library() -> None:
    lines = gtop("--version").stdout.splitlines()
    assert lines[0].startswith("gtop 0.")
    assert [line.split(":")[0] for line in lines[1:]] == [
        "NVIDIA driver",
        "CUDA driver API",
        "CUPTI",
    ]
    assert lines[1].startswith("NVIDIA driver: not found (")  # no GPU here: says why


def test_conventions_parse() -> None:
    assert parse_args(["--interval", "0.25"]).interval_s == 0.25
    # --rate is the Python stack sampling rate, as py-spy's (it was the NVML period's)
    rated = parse_args(["--rate", "250", "--interval", "1", "--no-idle"])
    assert (rated.py_rate_hz, rated.interval_s, rated.py_idle) == (250, 1, False)
    assert (parse_args([]).py_rate_hz, parse_args([]).py_idle) == (100, True)
    assert parse_args(["--gpus", "0,2"]).gpus == frozenset({0, 2})
    assert parse_args(["demo", "--json"]).once
    for argv in (["--rate", "0"], ["--rate", "2000"], ["--interval", "0.01"]):
        with pytest.raises(SystemExit):
            parse_args(argv)
    with pytest.raises(SystemExit):
        parse_args(["--gpus", "a"])


def test_unknown_theme_lists_the_themes(idle_busy_idle: Path) -> None:
    from gtop.cli.common import UserError
    from gtop.cli.parser import Config
    from gtop.cli.replay import cmd_replay

    with pytest.raises(UserError, match="nord"):
        cmd_replay(Config("replay", file=idle_busy_idle, theme="bogus"))


def test_serve_is_scraped_by_prometheus_parser() -> None:
    """A CUPTI recording replayed into the endpoint, read back with prometheus_client's
    own parser: dcgm-exporter's GPU gauges hold recorded values, gtop's attribution
    families are consistent with their window."""
    path = RECORDINGS / "slow_loader.gtop"
    families = scrape(path, 20)
    with Recording(path) as rec:
        t0, t1 = rec.time_range()
        utils = set(rec.read("gpu", t0, t1 + 1)["util_gpu"].tolist())
    (util,) = families["DCGM_FI_DEV_GPU_UTIL"].samples
    assert util.value in utils
    assert util.labels["gpu"] == "0" and util.labels["modelName"].startswith("NVIDIA H100")
    (used,) = families["DCGM_FI_DEV_FB_USED"].samples
    (free,) = families["DCGM_FI_DEV_FB_FREE"].samples
    assert used.value + free.value == pytest.approx(81559, abs=1)  # an H100 80GB, MiB
    (kernels,) = families["gtop_kernels"].samples
    assert kernels.name == "gtop_kernels_total" and kernels.value > 0
    (gar,) = families["gtop_gpu_active_ratio"].samples
    assert 0 <= gar.value <= 1
    off = sum(s.value for s in families["gtop_off_gpu_seconds"].samples)
    (window,) = families["gtop_attribution_window_seconds"].samples
    (unseen,) = families["gtop_not_traced_seconds"].samples  # no kernel sampling here: 0
    assert unseen.value == 0
    assert off == pytest.approx((window.value - unseen.value) * (1 - gar.value), rel=1e-6)


def test_record_refuses_a_name_that_promises_another_format(tmp_path: Path) -> None:
    out = tmp_path / "x.perfetto-trace"
    line = one_line_error(gtop("record", "--pid", "1", "-o", str(out)))
    assert "gtop export" in line and "x.gtop" in line
    assert not out.exists()
