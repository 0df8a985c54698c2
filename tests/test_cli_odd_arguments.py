"""Odd command lines get one clear line and a non-zero exit, never a traceback, a spin,
a recording that never stops, or a file gtop should not have touched."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gtop.cli.live import PF_KTHREAD
from gtop.cli.parser import parse_args
from tests.conftest import RECORDINGS

DEMO = RECORDINGS / "idle_busy_idle.gtop"


def gtop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def one_line(out: subprocess.CompletedProcess[str]) -> str:
    """The single ``gtop:`` line of a failed run."""
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert len(lines) == 1 and lines[0].startswith("gtop:"), out.stderr
    return lines[0]


def usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The message argparse gives for ``argv`` (exit status 2, no traceback)."""
    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e308", "0", "-1", "0.01"])
@pytest.mark.parametrize("command", [[], ["record", "-o", "x.gtop"]])
def test_interval_must_be_a_sane_number(
    value: str, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    message = usage_error([*command, "--interval", value], capsys)
    assert "--interval" in message


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_duration_must_be_finite_and_positive(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    message = usage_error(["record", "-o", "x.gtop", "--duration", value], capsys)
    assert "--duration" in message


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        *((["replay", str(DEMO), "--at", v], "--at") for v in ("nan", "inf", "1e300", "-1")),
        *((["demo", "--at", v], "--at") for v in ("nan", "-inf", "1e300")),
        *((["serve", "--replay", str(DEMO), "--at", v], "--at") for v in ("nan", "1e300")),
        *((["record", "-o", "x.gtop", "--rate", v], "--rate") for v in ("nan", "inf", "1e-300")),
        *(([*c, "--rate", v], "--rate") for c in ([], ["serve"]) for v in ("0", "-1", "1e9")),
        *(([*c, "--gpus", "99999999999999999999999"], "--gpus") for c in ([], ["demo"])),
        (["--pid", "99999999999999999999"], "--pid"),
        (["record", "-o", "x.gtop", "--duration", "1e300"], "--duration"),
        (["serve", "--port", "99999999999999999999"], "--port"),
    ],
)
def test_numbers_must_be_finite_and_in_range(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The audit's command lines: each number is refused as it is parsed, in one line."""
    assert option in usage_error(argv, capsys)


@pytest.mark.parametrize(
    "path",
    [
        "/tmp/" + "n" * 256 + ".gtop",  # one name longer than any file system takes
        "/tmp/" + "/".join(["d" * 200] * 3) + ".gtop",  # 600 bytes: more than SQLite takes
    ],
)
@pytest.mark.parametrize("command", [["record", "-o"], ["report"], ["replay"]])
def test_paths_too_long_are_refused(
    path: str, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert "path too long" in usage_error([*command, path], capsys)


def test_export_of_a_path_too_long_is_one_line(tmp_path: Path) -> None:
    line = one_line(gtop("export", "/tmp/" + "n" * 300, "-o", str(tmp_path / "x.json")))
    assert "File name too long" in line


def test_probe_kernel_must_be_a_regular_expression(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["probe", "instrument", "in.ptx", "--probe", "block_sched", "--kernel", "(", "-o", "x"]
    assert "not a regular expression" in usage_error(argv, capsys)


@pytest.mark.parametrize("bound", ["nan", "inf", "-inf"])
def test_report_window_bounds_must_be_numbers(bound: str) -> None:
    assert "is not seconds" in one_line(gtop("report", str(DEMO), f"--from={bound}"))


def test_report_window_past_the_end_is_empty_not_an_overflow() -> None:
    assert "is empty" in one_line(gtop("report", str(DEMO), "--from=1e308"))


def test_export_never_overwrites_its_input(tmp_path: Path) -> None:
    rec = tmp_path / "r.gtop"
    shutil.copy(DEMO, rec)
    before = rec.read_bytes()
    for out in (rec, tmp_path / "." / "r.gtop"):
        line = one_line(gtop("export", str(rec), "--format", "chrome", "-o", str(out)))
        assert "is the recording itself" in line
    assert rec.read_bytes() == before


def test_record_never_replaces_a_device_node(tmp_path: Path) -> None:
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    line = one_line(gtop("record", "-o", str(node), "--force", "--duration", "1"))
    assert "not a regular file" in line
    assert stat.S_ISCHR(os.lstat(node).st_mode)


@pytest.fixture
def python_target():
    """A real Python process to point gtop at."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_record_checks_the_output_before_attaching(python_target, tmp_path: Path) -> None:
    started = time.monotonic()
    out = gtop("record", "--pid", str(python_target.pid), "-o", str(tmp_path / "no/dir/x.gtop"))
    assert "no folder" in one_line(out)
    assert time.monotonic() - started < 20
    # nothing was injected: the target maps no gtop agent and runs on
    maps = Path(f"/proc/{python_target.pid}/maps").read_text()
    assert "gtop" not in maps and python_target.poll() is None


def test_a_zombie_is_not_a_target(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    try:
        line = one_line(gtop("record", "--pid", str(child.pid), "-o", str(tmp_path / "z.gtop")))
    finally:
        child.wait()
    assert "zombie" in line and not (tmp_path / "z.gtop").exists()


def kernel_thread() -> int:
    """A kernel thread's pid (kthreadd is 2 on Linux)."""
    for pid in (2, *range(3, 100)):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[6]) & PF_KTHREAD:
            return pid
    pytest.skip("no kernel thread visible (a PID namespace)")


def test_a_kernel_thread_is_not_a_target(tmp_path: Path) -> None:
    pid = kernel_thread()
    line = one_line(gtop("record", "--pid", str(pid), "-o", str(tmp_path / "k.gtop")))
    assert "kernel thread" in line and not (tmp_path / "k.gtop").exists()


def test_a_forced_host_tier_that_cannot_run_says_why(python_target, tmp_path: Path) -> None:
    """Root without capabilities (setpriv): --host-tier bpf is refused in one line, not
    turned into a recording without threads."""
    drop = ["setpriv", "--bounding-set", "-all", "--inh-caps", "-all", "--"]
    record = ["record", "--host-tier", "bpf", "--no-agent", "--pid", str(python_target.pid)]
    out = subprocess.run(
        [*drop, sys.executable, "-m", "gtop", *record, "-o", str(tmp_path / "b.gtop")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = one_line(out)
    assert "--host-tier bpf cannot run here" in line and "CAP_BPF" in line
    assert not (tmp_path / "b.gtop").exists()


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_the_writer_never_replaces_a_device_node(tmp_path: Path, suffix: str) -> None:
    """Below the command line too: a device where the recording or a side file goes."""
    from gtop.core.files import UnsafeFile
    from gtop.recordings.writer import RecordingWriter

    node = tmp_path / f"r.gtop{suffix}"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with pytest.raises(UnsafeFile, match="not a regular file"):
        RecordingWriter(tmp_path / "r.gtop", {}, overwrite=True)
    assert stat.S_ISCHR(os.lstat(node).st_mode)
