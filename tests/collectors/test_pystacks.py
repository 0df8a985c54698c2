"""Where gtop finds py-spy: beside the running interpreter, before PATH (sudo drops a
venv's bin from PATH)."""

from __future__ import annotations

from pathlib import Path

from gtop.collectors.threads import pystacks


def test_py_spy_is_found_beside_the_interpreter_without_path(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "")
    found = pystacks.available()
    assert found is not None and Path(found).is_file()
