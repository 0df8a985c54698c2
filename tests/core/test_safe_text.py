"""A target's names are shown as data: no control character survives, and none is lost."""

from __future__ import annotations

import re

from gtop.core.safe_text import MAX_SHOWN, shown, shown_tree, terminal_text

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
HOSTILE = [
    "\x1b[2J\x1b]0;PWN\x07",
    "\x1b]2;PWN\x1b\\",
    "\x9b31m",  # C1 CSI
    "evil\u202etxt.exe",
    "a\nb\rc\td\x00e\x7f",
    "bad utf-8 \udcff\udcfe",
    "\u2028\u2029\u2066\u2069\u061c",
]


def test_every_control_character_is_escaped_visibly() -> None:
    for text in HOSTILE:
        out = shown(text)
        assert not CONTROL.search(out), repr(out)
        out.encode("utf-8")  # no lone surrogate either
        assert "\\" in out  # shown as an escape, not dropped
    assert shown("\x1b[31mred") == "\\e[31mred"
    assert shown("a\u202eb") == "a\\u202eb"


def test_plain_names_are_given_back_themselves() -> None:
    name = "torch::autograd::Engine::thread_main (engine.cpp:123) — über ✓"
    assert shown(name) is name
    tree = {"frames": [name, "f (a.py)"], "pid": 3}
    assert shown_tree(tree) is tree


def test_huge_names_are_cut() -> None:
    assert len(shown("x" * 65536)) == MAX_SHOWN
    assert len(shown("\x1b" * 65536)) == MAX_SHOWN
    assert shown("x" * 65536).endswith("…")


def test_trees_are_cleaned_keys_and_all() -> None:
    tree = {"a\x1b": ["\x1b", ("\n",)], "n": 1.5}
    assert shown_tree(tree) == {"a\\e": ["\\e", ("\\n",)], "n": 1.5}


def test_terminal_text_keeps_line_ends_only() -> None:
    assert terminal_text("a,b\r\nc\n") == "a,b\r\nc\n"
    assert terminal_text("a\rb\x1b[2J\n") == "a\\rb\\e[2J\n"
