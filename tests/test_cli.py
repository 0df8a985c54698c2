from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gtop.cli.parser import Config, parse_args
from gtop.recordings.exporters import FORMATS
from gtop.recordings.reader import Recording


def gtop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *args], capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], Config("top")),
        (["--pid", "12", "--interval", "0.1"], Config("top", pid=12, interval_s=0.1)),
        (
            ["record", "-o", "x.gtop", "--duration", "3"],
            Config("record", output=Path("x.gtop"), duration_s=3.0),
        ),
        (["replay", "f.gtop", "--no-color"], Config("replay", file=Path("f.gtop"), no_color=True)),
        (
            ["report", "f.gtop", "--json"],
            Config("report", file=Path("f.gtop"), files=(Path("f.gtop"),), json=True),
        ),
        (
            ["report", "a.gtop", "b.gtop"],
            Config("report", file=Path("a.gtop"), files=(Path("a.gtop"), Path("b.gtop"))),
        ),
        (["demo"], Config("demo")),
        (["doctor"], Config("doctor")),
    ],
)
def test_parse_args(argv: list[str], expected: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert parse_args(argv) == expected


def test_building_the_parser_imports_no_exporter_nor_numpy() -> None:
    """Every command builds the whole parser first (``gtop record`` before it launches its
    target): the exporters, the probe engine and numpy load only when a command runs."""
    code = (
        "import sys; from gtop.cli.parser import build_parser; build_parser(); "
        "print(*(m for m in sys.modules if m == 'numpy' or m.startswith('gtop.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    assert "gtop.recordings.options" in loaded  # what --format's help is built from
    heavy = {f"gtop.recordings.exporters.{f.module}" for f in FORMATS.values()}
    heavy |= {"numpy", "gtop.recordings.clipped", "gtop.probes.command", "gtop.probes.catalog"}
    assert not loaded & heavy


def test_no_color_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert parse_args([]).no_color


@pytest.mark.parametrize(
    "argv", [["--interval", "0.05"], ["--pid", "abc"], ["--pid", "-3"], ["record"], ["bogus"]]
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("gtop: ")
    return lines[0]


def test_overview_without_gpu_points_to_demo() -> None:
    assert "gtop demo" in one_line_error(gtop())


def test_unknown_pid(tmp_path: Path) -> None:
    assert "999999999" in one_line_error(gtop("--pid", "999999999"))
    out = str(tmp_path / "x.gtop")
    assert "999999999" in one_line_error(gtop("record", "--pid", "999999999", "-o", out))


def test_missing_recording() -> None:
    assert "missing.gtop" in one_line_error(gtop("replay", "missing.gtop"))
    assert "missing.gtop" in one_line_error(gtop("report", "missing.gtop"))


def test_record_refuses_to_overwrite(tmp_path: Path) -> None:
    existing = tmp_path / "x.gtop"
    existing.write_text("precious")
    assert "--force" in one_line_error(gtop("record", "--pid", "1", "-o", str(existing)))
    assert existing.read_text() == "precious"


def test_record_a_live_process_without_gpu(tmp_path: Path) -> None:
    out = tmp_path / "host.gtop"
    target = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    busy = psutil.Process(target.pid)
    try:
        cpu0, t0 = sum(busy.cpu_times()[:2]), time.monotonic()
        result = gtop(
            "record",
            "--pid",
            str(target.pid),
            "-o",
            str(out),
            "--duration",
            "2",
            "--interval",
            "0.1",
        )
        # the share of a core the loop really got meanwhile (the kernel's count): on a
        # loaded machine it is far below 100%
        got = 100 * (sum(busy.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
    finally:
        target.kill()
        target.wait()
    assert result.returncode == 0, result.stderr
    report = json.loads(gtop("report", "--json", str(out)).stdout)
    assert report["complete"] is True and report["devices"] == []
    (proc,) = report["processes"]
    assert proc["pid"] == target.pid
    assert 0.4 * got < proc["cpu_percent"]["mean"] < 2.5 * got + 5, got
    assert 1.5 < report["duration_s"] < 3


def test_record_of_a_launched_command_ends_and_leaves_it_running(tmp_path: Path) -> None:
    out = tmp_path / "launched.gtop"
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    cmd = ["record", "-o", str(out), "--duration", "2", "--host-tier", "off", "--"]
    # to a file, not a pipe: the command inherits gtop's stderr and keeps it open
    log = tmp_path / "stderr"
    with log.open("w") as err:
        argv = [sys.executable, "-m", "gtop", *cmd, sys.executable, "-c", code]
        returncode = subprocess.run(argv, stderr=err, timeout=60).returncode
    pid = int(pid_file.read_text())
    try:
        assert returncode == 0, log.read_text()
        assert f"(pid {pid}) runs on untraced" in log.read_text()
        os.kill(pid, 0)  # still running: recording ended, the command did not
    finally:
        os.kill(pid, signal.SIGKILL)
    assert json.loads(gtop("report", "--json", str(out)).stdout)["complete"] is True


def _launched_recording(tmp_path: Path, *cmd: str) -> tuple[str, Recording]:
    out = tmp_path / "launched.gtop"
    result = gtop("record", "-o", str(out), "--interval", "0.1", "--", *cmd)
    assert result.returncode == 0, result.stderr
    return result.stdout, Recording(out)


def test_a_launched_command_is_traced_from_its_first_line(tmp_path: Path) -> None:
    """Its host threads are followed before it runs (held at its exec meanwhile): the
    first thread-state row of its main thread is no later than its own first line."""
    code = "import os, time; print(os.getpid(), time.monotonic_ns(), flush=True); time.sleep(0.5)"
    out, rec = _launched_recording(tmp_path, sys.executable, "-c", code)
    pid, first_line_ns = (int(v) for v in out.split())
    with rec:
        rows = rec.read("thread_state")
        mine = rows[rows["tid"] == pid]
        assert len(mine), "no thread states recorded for the target"
        assert int(mine["t_ns"].min()) <= first_line_ns


def test_a_launched_commands_main_thread_has_its_own_name(tmp_path: Path) -> None:
    """Not the gate's (a Python) that held it: the name an exec gives it."""
    out, rec = _launched_recording(tmp_path, "sh", "-c", "echo $$; sleep 1; true")
    with rec:
        names = {e.key: e.value["name"] for e in rec.entities("thread")}
    assert names[out.strip()] == "sh"


def test_report_on_real_recording(idle_busy_idle: Path) -> None:
    report = json.loads(gtop("report", "--json", str(idle_busy_idle)).stdout)
    assert {"version", "start", "duration_s", "devices", "processes", "drops"} <= set(report)
    (dev,) = report["devices"]
    assert dev["index"] == 0 and dev["name"] == "NVIDIA H200"
    # 10 s busy out of ~26 s recorded
    assert 25 < dev["utilization_pct"]["mean"] < 50
    assert dev["utilization_pct"]["max"] >= 95
    assert dev["memory_total_mib"] > 100_000
    text = gtop("report", str(idle_busy_idle)).stdout
    assert "NVIDIA H200" in text


def test_doctor_reports_every_check() -> None:
    result = gtop("doctor")
    assert result.returncode == 0
    names = ["NVML", "libcupti", "ptrace", "threads: bpf", "threads: proc", "ptxas"]
    for name in names:
        assert name in result.stdout
    nvml_line = next(line for line in result.stdout.splitlines() if "NVML" in line)
    assert nvml_line.startswith("NO ")  # CI has no GPU: the reason must be given


def test_report_gpu_section_is_a_labelled_approximation_without_cupti(
    idle_busy_idle: Path,
) -> None:
    whole = ["--from", "0", "--to", "1000"]
    report = json.loads(gtop("report", "--json", *whole, str(idle_busy_idle)).stdout)
    gpu = report["gpu"]["0"]
    assert gpu["exact"] is False
    total = sum(gpu["on_s"].values()) + sum(gpu["off_s"].values())
    assert abs(total - report["duration_s"]) <= 0.005 * report["duration_s"]
    assert 0.3 < gpu["gar"] < 0.45  # 10 s of matmuls in ~26 s
    # by default the breakdown covers the GPU's busy span only (NVML's, without CUPTI)
    busy = json.loads(gtop("report", "--json", str(idle_busy_idle)).stdout)
    assert 9 < busy["window"]["duration_s"] < 11 and busy["gpu"]["0"]["gar"] > 0.9
    assert gpu["panels_s"]["OFF-GPU^queue"] is None  # unknowable from NVML
    assert report["kernels"] == []  # no CUPTI in this recording


def test_command_after_double_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    config = parse_args(
        [
            "record",
            "--force",
            "--agent-mode",
            "full",
            "--interval",
            "0.25",
            "-o",
            "x.gtop",
            "--",
            "python",
            "-c",
            "print(1)",
            "-o",
            "y",
        ]
    )
    assert config.command == "record" and config.output == Path("x.gtop")
    assert config.agent_mode == "full" and config.overwrite
    assert config.cmd == ("python", "-c", "print(1)", "-o", "y")
    assert parse_args(["run", "--", "python", "t.py"]).cmd == ("python", "t.py")
    for argv in (["run"], ["record", "-o", "x", "--pid", "3", "--", "python"], ["--", "ls"]):
        with pytest.raises(SystemExit):
            parse_args(argv)


def test_report_on_real_cupti_recording() -> None:
    """A training loop recorded with the agent on an H200: kernels, copies, API, threads,
    and an exact on-/off-GPU breakdown."""
    path = Path(__file__).parent.parent / "recordings" / "train_loop_cupti.gtop"
    report = json.loads(gtop("report", "--json", str(path)).stdout)
    kernels = report["kernels"]
    assert len(kernels) > 10
    top = kernels[0]
    assert {"name", "count", "total_ns", "mean_ns", "max_ns"} <= set(top)
    assert all(k["count"] > 0 and k["max_ns"] >= k["mean_ns"] > 0 for k in kernels)
    assert report["api"] and report["threads"]
    gpu = report["gpu"]["0"]
    assert gpu["exact"] is True
    total = sum(gpu["on_s"].values()) + sum(gpu["off_s"].values())
    assert abs(total - gpu["duration_s"]) <= 0.005 * gpu["duration_s"]
    assert not [k for k in report["drops"] if report["drops"][k]]
