"""Write docs/cli.md from gtop's argparse definitions (``python3 tools/gen_cli_docs.py``).

The page is built from the parser's actions, not from ``format_help()``, so it reads the
same on every Python version argparse's layout changed in. ``tests/test_cli_docs.py``
fails when the committed page differs from what this renders: after changing an option,
run this script and commit docs/cli.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "cli.md"
HEADER = """\
# gtop command line

Generated from the argparse definitions in `gtop/cli/parser.py` by `python3 tools/gen_cli_docs.py`;
do not edit by hand (`tests/test_cli_docs.py` checks that it matches the code).
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _names(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    nargs_free = action.nargs == 0
    metavar = "" if nargs_free else f" {action.metavar or action.dest.upper()}"
    return ", ".join(f"{opt}{metavar}" for opt in action.option_strings)


def _what(action: argparse.Action) -> str:
    text = action.help or ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        shown = ", ".join(str(c) for c in action.choices)
        if shown not in text:
            text += f" (one of: {shown})"
    if action.required and action.option_strings:
        text += " (required)"
    return _cell(text % {"default": action.default} if "%(" in text else text)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def render_parser(parser: argparse.ArgumentParser, title: str) -> list[str]:
    """One section: the parser's description, then a table of its arguments, then its
    subcommands' sections."""
    lines = [f"## {title}", ""]
    if parser.usage:
        lines += ["```", parser.usage.replace("%(prog)s", title), "```", ""]
    description = (parser.description or "").strip()
    if "\n" in description:  # laid out by hand (RawDescriptionHelpFormatter)
        lines += ["```", description, "```", ""]
    elif description:
        lines += [description, ""]
    rows = [
        f"| `{_cell(_names(a))}` | {_what(a)} |"
        for a in parser._actions
        if a.help != argparse.SUPPRESS
        and not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    if rows:
        lines += ["| argument | what |", "|---|---|", *rows, ""]
    subs = _subcommands(parser)
    if subs:
        lines += ["| command | what |", "|---|---|"]
        lines += [f"| `{title} {name}` | {_cell(text)} |" for name, text, _ in subs]
        lines.append("")
        for name, _, sub in subs:
            lines += render_parser(sub, f"{title} {name}")
    return lines


def render() -> str:
    sys.path.insert(0, str(REPO))
    from gtop.cli.parser import build_parser

    body = render_parser(build_parser(), "gtop")
    return HEADER + "\n" + "\n".join(body).rstrip() + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(REPO)}")
