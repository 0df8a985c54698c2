"""docs/cli.md is what tools/gen_cli_docs.py renders from the argparse definitions."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

import gen_cli_docs  # noqa: E402


def test_cli_docs_match_the_parser() -> None:
    committed = (REPO / "docs" / "cli.md").read_text()
    assert committed == gen_cli_docs.render(), (
        "docs/cli.md is stale: run python3 tools/gen_cli_docs.py and commit it"
    )


def test_cli_docs_name_every_subcommand_and_option() -> None:
    from gtop.cli.parser import build_parser

    text = gen_cli_docs.render()
    parser = build_parser()
    for action in parser._actions:
        if action.dest == "help":
            continue
        for opt in action.option_strings:
            assert f"`{opt}" in text, opt
    for name in ("record", "replay", "report", "export", "demo", "doctor", "probe"):
        assert f"## gtop {name}\n" in text, name
