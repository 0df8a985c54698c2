"""A PTX parser that keeps the source lines untouched.

The module is read as a list of source lines; functions and the statements in their
bodies point into those lines. A rewriter can therefore only *insert* lines, so every
original line survives byte for byte. Anything the parser does not understand raises
:class:`PtxParseError` with the 1-based line number and the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

HEADER_DIRECTIVES = (".version", ".target", ".address_size")
# Module-scope statements that end at the end of their line (no ';').
_LINE_DIRECTIVES = (".file", ".loc")
_DECL_STARTS = (".global", ".const", ".shared", ".extern", ".visible", ".weak", ".common")
# Body directives the rewriter knows how to step around.
BODY_DIRECTIVES = (
    ".reg",
    ".local",
    ".shared",
    ".param",
    ".loc",
    ".pragma",
    ".callprototype",
    ".const",
    ".global",
)
# Performance-tuning directives between a function's parameters and its body.
_FUNC_DIRECTIVES = (
    ".reqntid",
    ".maxntid",
    ".maxnreg",
    ".minnctapersm",
    ".maxnctapersm",
    ".reqnctapercluster",
    ".explicitcluster",
    ".maxclusterrank",
    ".noreturn",
    ".pragma",
)
_OPCODE = re.compile(r"[a-z][a-z0-9_]*(\.[A-Za-z0-9_:]+)*")
_LABEL = re.compile(r"[A-Za-z_$][\w$]*")
_GUARD = re.compile(r"@(!?)(%?[A-Za-z_$][\w$]*)\s+")
_FUNC_NAME = re.compile(r"\.(entry|func)\s*(?:\([^)]*\))?\s*([A-Za-z_$][\w$]*)")


class PtxParseError(ValueError):
    """PTX that the parser does not understand; ``line`` is 1-based."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


class Kind(Enum):
    """What a body statement is."""

    INSTR = "instr"
    LABEL = "label"
    DIRECTIVE = "directive"
    OPEN = "open"  # '{' of a nested scope
    CLOSE = "close"  # '}' of a nested scope


@dataclass(frozen=True)
class Instruction:
    """One PTX instruction: optional guard ``@%p``/``@!%p``, dotted opcode, operands."""

    opcode: str
    operands: tuple[str, ...]
    guard: str | None = None
    negated: bool = False

    @property
    def root(self) -> str:
        """The opcode without modifiers: ``ld`` for ``ld.global.v4.b32``."""
        return self.opcode.split(".", 1)[0]

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.opcode.split("."))


@dataclass(frozen=True)
class Statement:
    """A statement spanning source lines ``first..last`` (0-based, inclusive)."""

    kind: Kind
    first: int
    last: int
    code: str  # the statement without comments, whitespace-normalised
    instr: Instruction | None = None
    alone_first: bool = True  # no other statement ends on line ``first``
    alone_last: bool = True  # no other statement starts on line ``last``


@dataclass(frozen=True)
class Function:
    """A ``.entry`` kernel or ``.func`` device function; ``open``/``close`` are brace lines."""

    name: str
    is_entry: bool
    open: int
    close: int
    statements: tuple[Statement, ...]
    reqntid: tuple[int, int, int] | None = None  # the exact block shape, when declared

    def instructions(self) -> list[Statement]:
        return [s for s in self.statements if s.kind is Kind.INSTR]


@dataclass(frozen=True)
class Module:
    """A parsed PTX module. ``header_end`` is the line index after ``.address_size``."""

    lines: tuple[str, ...]
    functions: tuple[Function, ...]
    header_end: int
    shared_names: frozenset[str]  # module-scope and function-scope .shared variables

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.is_entry]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def split_operands(text: str) -> tuple[str, ...]:
    """Split an operand list at commas outside ``{}``, ``[]`` and ``()``."""
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    last = "".join(cur).strip()
    if last:
        out.append(last)
    return tuple(out)


def parse_instruction(code: str, line: int) -> Instruction:
    """Parse ``[@[!]pred] opcode operands`` (no trailing ';').

    Raises:
        PtxParseError: when the opcode or guard is malformed.
    """
    guard = None
    negated = False
    m = _GUARD.match(code)
    if code.startswith("@"):
        if not m:
            raise PtxParseError(line, f"malformed guard predicate in {code[:40]!r}")
        negated, guard = m.group(1) == "!", m.group(2)
        code = code[m.end() :]
    op = _OPCODE.match(code)
    if not op or (op.end() < len(code) and not code[op.end()].isspace()):
        raise PtxParseError(line, f"not an instruction: {code[:60]!r}")
    return Instruction(op.group(0), split_operands(code[op.end() :]), guard, negated)


def _strip_comments(lines: tuple[str, ...]) -> list[str]:
    """The lines with comments (``//``, ``/* */``) removed; string literals kept."""
    code: list[str] = []
    in_block = False
    for raw in lines:
        out = []
        i = 0
        in_str = False
        while i < len(raw):
            if in_block:
                end = raw.find("*/", i)
                if end < 0:
                    break
                in_block, i = False, end + 2
                out.append(" ")
                continue
            ch = raw[i]
            if in_str:
                in_str = ch != '"'
            elif ch == '"':
                in_str = True
            elif raw.startswith("//", i):
                break
            elif raw.startswith("/*", i):
                in_block, i = True, i + 2
                continue
            out.append(ch)
            i += 1
        code.append("".join(out))
    return code


def _split_body(code: list[str], start: int, end: int) -> list[Statement]:
    """Split body lines ``start..end`` (exclusive) into statements."""
    raw: list[tuple[str, int, int]] = []  # (text, first line, last line)
    buf: list[str] = []
    first = -1
    for idx in range(start, end):
        line = code[idx]
        for ch in line:
            if not buf and ch.isspace():
                continue
            if not buf:
                first = idx
            if ch in "{}" and not "".join(buf).strip():
                raw.append((ch, idx, idx))
                buf = []
                continue
            if ch == ";":
                raw.append((" ".join("".join(buf).split()), first, idx))
                buf = []
                continue
            if ch == ":" and _LABEL.fullmatch("".join(buf).strip()):
                raw.append(("".join(buf).strip() + ":", first, idx))
                buf = []
                continue
            buf.append(ch)
        text = " ".join("".join(buf).split())
        if text.startswith(".loc") or text.startswith(".file"):
            raw.append((text, first, idx))
            buf = []
        elif buf:
            buf.append(" ")
    if "".join(buf).strip():
        raise PtxParseError(first + 1, f"unterminated statement {''.join(buf).strip()[:60]!r}")
    touches: dict[int, int] = {}
    for _, f, la in raw:
        for line in {f, la}:
            touches[line] = touches.get(line, 0) + 1
    out = []
    for text, f, la in raw:
        kind, instr = _classify(text, f)
        out.append(Statement(kind, f, la, text, instr, touches[f] == 1, touches[la] == 1))
    return out


def _classify(code: str, first: int) -> tuple[Kind, Instruction | None]:
    if code == "{":
        return Kind.OPEN, None
    if code == "}":
        return Kind.CLOSE, None
    if code.endswith(":"):
        return Kind.LABEL, None
    if code.startswith("."):
        word = code.split(None, 1)[0]
        if word not in BODY_DIRECTIVES:
            raise PtxParseError(first + 1, f"unsupported directive {word!r} in a function body")
        return Kind.DIRECTIVE, None
    return Kind.INSTR, parse_instruction(code, first + 1)


def split_statements(text: str) -> list[Statement]:
    """Statements of a free-standing piece of body code (e.g. a probe snippet)."""
    lines = tuple(text.splitlines())
    return _split_body(_strip_comments(lines), 0, len(lines))


_SHARED_DECL = re.compile(r"\.shared\b[^;]*?([A-Za-z_$][\w$]*)\s*(\[[^\]]*\])?\s*(=|;|$)")


def parse(text: str) -> Module:
    """Parse PTX text into a :class:`Module`.

    Raises:
        PtxParseError: on anything outside the supported subset, with line and reason.
    """
    lines = tuple(text.splitlines())
    code = _strip_comments(lines)
    functions: list[Function] = []
    shared: set[str] = set()
    header_end = -1
    i = 0
    n = len(lines)
    while i < n:
        stripped = code[i].strip()
        if not stripped:
            i += 1
            continue
        word = stripped.split(None, 1)[0]
        if word in HEADER_DIRECTIVES:
            if word == ".address_size":
                header_end = i + 1
            i += 1
        elif word in _LINE_DIRECTIVES:
            i += 1
        elif word == ".section":
            i = _skip_block(code, i)
        elif word in _DECL_STARTS or word in (".entry", ".func"):
            i = _top_level(code, lines, i, functions, shared)
        else:
            raise PtxParseError(i + 1, f"unexpected {word!r} at module scope")
    if header_end < 0:
        raise PtxParseError(1, "no .address_size directive (is this PTX?)")
    return Module(lines, tuple(functions), header_end, frozenset(shared))


def _reqntid(tail: list[str]) -> tuple[int, int, int] | None:
    """The ``.reqntid x[, y[, z]]`` of a function's directives (missing sizes are 1)."""
    m = re.search(r"\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", " ".join(tail))
    if not m:
        return None
    x, y, z = (int(v) if v else 1 for v in m.groups())
    return (x, y, z)


def _skip_block(code: list[str], i: int) -> int:
    """Skip a ``.section NAME { ... }`` debug block; returns the index after it."""
    depth = 0
    opened = False
    for j in range(i, len(code)):
        depth += code[j].count("{") - code[j].count("}")
        opened = opened or "{" in code[j]
        if opened and depth == 0:
            return j + 1
        if j > i and not opened and code[j].strip() and code[j].strip() != "{":
            return j  # a .section without a brace block
    raise PtxParseError(i + 1, "unterminated .section block")


def _top_level(
    code: list[str], lines: tuple[str, ...], i: int, functions: list[Function], shared: set[str]
) -> int:
    """Read a declaration or function starting at line ``i``; returns the next index."""
    depth = 0
    j = i
    is_function = False
    while j < len(code):
        is_function = is_function or re.search(r"\.(entry|func)\b", code[j]) is not None
        for ch in code[j]:
            if ch in "({" and not (ch == "{" and is_function):
                depth += 1
            elif ch in ")}":
                depth -= 1
            elif depth == 0 and ch == ";":
                decl = " ".join(" ".join(code[i : j + 1]).split())
                m = _SHARED_DECL.search(decl)
                if m and ".func" not in decl:
                    shared.add(m.group(1))
                return j + 1
            elif depth == 0 and ch == "{":
                return _function(code, lines, i, j, functions, shared)
        j += 1
    raise PtxParseError(i + 1, "declaration never ends (no ';' or '{')")


def _function(
    code: list[str],
    lines: tuple[str, ...],
    header: int,
    open_line: int,
    functions: list[Function],
    shared: set[str],
) -> int:
    head = " ".join(" ".join(code[header:open_line]).split())
    head += " " + code[open_line].split("{", 1)[0]
    m = _FUNC_NAME.search(head)
    if not m:
        raise PtxParseError(header + 1, "a '{' block at module scope that is not .entry/.func")
    after = code[open_line].split("{", 1)[1]
    if after.strip():
        raise PtxParseError(open_line + 1, "code after a function's opening brace")
    tail = head[head.rfind(")") + 1 :].split() if ")" in head else []
    for word in tail:
        if word.startswith(".") and word not in _FUNC_DIRECTIVES:
            raise PtxParseError(header + 1, f"unsupported function directive {word!r}")
    depth = 1
    j = open_line + 1
    while j < len(code) and depth:
        depth += code[j].count("{") - code[j].count("}")
        if depth <= 0:
            break
        j += 1
    if depth != 0 or j >= len(code):
        raise PtxParseError(header + 1, f"function {m.group(2)!r} has no closing brace")
    if code[j].strip() != "}":
        raise PtxParseError(j + 1, "a function's closing brace must be on its own line")
    stmts = _split_body(code, open_line + 1, j)
    for s in stmts:
        if s.kind is Kind.DIRECTIVE and s.code.startswith(".shared"):
            d = _SHARED_DECL.search(s.code)
            if d:
                shared.add(d.group(1))
    functions.append(
        Function(m.group(2), m.group(1) == "entry", open_line, j, tuple(stmts), _reqntid(tail))
    )
    return j + 1
