"""docs/api.md's examples run as written, against a committed recording; the public
names are what the page says, and ``import gtop`` stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import gtop

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("n", range(len(BLOCKS)))
def test_example_runs(n: int, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(REPO)
    exec(compile(BLOCKS[n], f"docs/api.md block {n + 1}", "exec"), {})
    assert capsys.readouterr().out.strip()


def test_public_names() -> None:
    import gtop.api

    assert set(gtop.api.__all__) | {"__version__"} == set(gtop.__all__)
    for name in gtop.__all__:
        assert getattr(gtop, name) is not None
    assert gtop.REPORT_VERSION == 1 and isinstance(gtop.FORMAT_VERSION, int)
    with pytest.raises(AttributeError):
        gtop.no_such_name  # noqa: B018


def test_import_gtop_is_light() -> None:
    code = "import sys, gtop; print([m for m in sys.modules if m.startswith(('gtop.', 'numpy'))])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.stdout.strip() == "[]", out.stdout


def test_bad_files_and_names(tmp_path: Path) -> None:
    with pytest.raises(gtop.RecordingError):
        gtop.open(tmp_path / "missing.gtop")
    with gtop.open(REPO / "recordings" / "train_loop_cupti.gtop") as rec:
        with pytest.raises(KeyError):
            rec.stream("no_such_stream")
        with pytest.raises(ValueError):
            rec.window("soon")
        assert rec.window() == rec.window()


def test_accessors_agree_with_the_report() -> None:
    with gtop.open(REPO / "recordings" / "train_loop_cupti.gtop") as rec:
        report = rec.report()
        assert rec.attribution() is report["gpu"] and rec.verdict() is report["verdict"]
        assert rec.kernels() is report["kernels"] and rec.window().kind == "steady"
        act, window = rec.active_window(), rec.window()
        assert act.t0 <= window.t0 < window.t1 <= act.t1
        assert rec.dtype("kernel") == rec.stream("kernel").dtype
        names = rec.kernel_names()
        assert {int(i) for i in rec.stream("kernel")["name_id"]} <= set(names)
