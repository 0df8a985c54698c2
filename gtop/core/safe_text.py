"""Text from a target made safe to show: data, never terminal control.

A profiled process names itself (argv, ``comm``, thread names), its code (perf-map and
ELF symbols, Python function and file names), its kernels and its NVTX ranges; an
attacker's process picks those names. Everything gtop shows a person passes through
here first:

- :func:`shown` for one name: every control character (C0, DEL, C1), bidirectional
  control, line or paragraph separator and lone surrogate is written as a visible escape
  (``\\x1b``, ``\\n``, ``\\u202e``), and the name is cut to :data:`MAX_SHOWN` characters;
- :func:`shown_tree` for a whole report or frame (every string in nested dicts/lists);
- :func:`terminal_text` for a block of output at the boundary: the same escapes, but
  its own line breaks kept (``\\n``, and ``\\r\\n`` as CSV ends its rows).
"""

from __future__ import annotations

import re
from typing import Any

MAX_SHOWN = 4096
"""Longest name shown (characters; C++ kernel names run to ~2,000): a 64 KiB argv is
cut to this, with an ellipsis."""

_OTHER = (
    "\x7f-\x9f"  # DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional controls
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (undecodable bytes kept by surrogateescape)
)
_UNSAFE = re.compile(f"[\x00-\x1f{_OTHER}]")
_UNSAFE_BUT_LINES = re.compile(f"\r(?!\n)|[\x00-\x09\x0b\x0c\x0e-\x1f{_OTHER}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` as one line with no control character, cut to ``limit`` characters."""
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    if _UNSAFE.search(text) is None:
        return text
    out = _UNSAFE.sub(_escape, text)
    return out if len(out) <= limit else out[: max(0, limit - 1)] + "…"


def shown_tree(value: Any, limit: int = MAX_SHOWN) -> Any:
    """``value`` with every string in it (keys too, nested in dicts, lists and tuples)
    passed through :func:`shown`; other values as they are. What needs no change is
    given back itself (``shown_tree(v) is v`` when ``v`` is safe)."""
    if isinstance(value, str):
        return shown(value, limit)
    if isinstance(value, dict):
        items = [(shown_tree(k, limit), shown_tree(v, limit)) for k, v in value.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(items, value.items()))
        return value if same else dict(items)
    if isinstance(value, (list, tuple)):
        parts = [shown_tree(v, limit) for v in value]
        return value if all(a is b for a, b in zip(parts, value)) else type(value)(parts)
    return value


def terminal_text(text: str) -> str:
    """A block of output with no control character but its line ends (``\\n``, and the
    ``\\r`` of a ``\\r\\n``) escaped; no length limit."""
    if _UNSAFE_BUT_LINES.search(text) is None:
        return text
    return _UNSAFE_BUT_LINES.sub(_escape, text)
