"""``gtop export``: the format from the output's name, stdout, gzip, refusals as one line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gtop.cli import main
from gtop.recordings.exporters import FORMATS, infer_format
from tests.conftest import RECORDINGS, REPO

SMALL = RECORDINGS / "idle_busy_idle.gtop"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("t.perfetto-trace", "perfetto"),
        ("t.perfetto-trace.gz", "perfetto"),
        ("t.json", "chrome"),
        ("host.1234.pt.trace.json", "kineto"),
        ("t.speedscope.json", "speedscope"),
        ("t.folded", "folded"),
        ("t.pb.gz", "pprof"),
        ("t.dat", None),
        ("csv-out", None),
    ],
)
def test_format_from_the_output_name(name: str, fmt: str | None) -> None:
    assert infer_format(Path(name)) == fmt


def test_every_format_names_a_module_that_exports() -> None:
    for fmt in FORMATS.values():
        assert callable(fmt.exporter().export), fmt.name


def _gtop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gtop", *args], cwd=REPO, capture_output=True, timeout=120
    )


def test_an_unknown_name_is_one_line(tmp_path: Path) -> None:
    run = _gtop("export", str(SMALL), "-o", str(tmp_path / "t.dat"))
    assert run.returncode == 2
    assert run.stderr.decode().count("\n") == 1
    assert (
        run.stderr.startswith(b"gtop: export: cannot tell the format") and b"--format" in run.stderr
    )
    assert not (tmp_path / "t.dat").exists()


def test_stdout_and_gzip(tmp_path: Path) -> None:
    run = _gtop("export", str(SMALL), "--format", "chrome", "-o", "-")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["traceEvents"]
    assert not (REPO / "-").exists()
    out = tmp_path / "t.json.gz"
    assert main(["export", str(SMALL), "-o", str(out), "--gzip"]) == 0
    assert json.loads(gzip.decompress(out.read_bytes())) == json.loads(run.stdout)
    assert (out.stat().st_mode & 0o777) == 0o644
    implied = tmp_path / "implied.json.gz"  # a .gz name compresses without --gzip
    assert main(["export", str(SMALL), "-o", str(implied)]) == 0
    assert gzip.decompress(implied.read_bytes()) == gzip.decompress(out.read_bytes())


def test_a_planted_symlink_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "t.json").symlink_to(victim)
    run = _gtop("export", str(SMALL), "-o", str(tmp_path / "t.json"))
    assert run.returncode == 1 and b"is a symbolic link" in run.stderr
    assert run.stderr.count(b"\n") == 1
    assert victim.read_text() == "keep"


def test_csv_to_stdout_is_refused_in_one_line() -> None:
    run = _gtop("export", str(SMALL), "--format", "csv", "-o", "-")
    assert run.returncode == 2 and run.stderr.count(b"\n") == 1
    assert b"csv writes a directory" in run.stderr


def test_a_missing_recording_is_one_line(tmp_path: Path) -> None:
    run = _gtop("export", str(tmp_path / "nope.gtop"), "-o", str(tmp_path / "t.json"))
    assert run.returncode == 1 and run.stderr.count(b"\n") == 1
