"""The repository keeps its own promises: no dead code in gtop/, and every file the docs
name exists. (The import-layer contracts run in CI as ``lint-imports``.)"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
TEXTUAL_NAMES = (
    "on_*,action_*,watch_*,compose,render,BINDINGS,DEFAULT_CSS,COMPONENT_CLASSES,CSS,"
    "TITLE,SUB_TITLE,sub_title,check_action,get_default_screen,search,discover,AUTO_FOCUS"
)
"""What Textual calls or reads by name (handlers, actions, watchers, class settings)."""
NAMED_PATH = re.compile(r"(?<![\w./-])((?:gtop|tests|benchmarks|recordings|docs|tools)/[\w./-]*\w)")


def test_no_dead_code_in_gtop() -> None:
    """vulture over the whole tree (a name used only by tests still counts as used); names
    used from C, by Textual or by callers' protocols are listed in the whitelist."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "vulture",
            "gtop",
            "tests",
            "benchmarks",
            "tools",
            "--min-confidence",
            "60",
            "--ignore-names",
            TEXTUAL_NAMES,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode in (0, 3), out.stderr  # 3: vulture found something
    dead = [line for line in out.stdout.splitlines() if line.startswith("gtop/")]
    assert not dead, "\n".join(dead)


def test_every_file_the_docs_name_exists() -> None:
    missing = [
        f"{doc}: {path}"
        for doc in DOCS
        for path in sorted(set(NAMED_PATH.findall((REPO / doc).read_text())))
        if not any(c in path for c in "*{") and not (REPO / path.rstrip(".")).exists()
    ]
    assert not missing, "\n".join(missing)


def test_the_recordings_stay_under_15_mb() -> None:
    """The tracked recordings (with ``gtop/demo/``, which the wheel packages) weigh at
    most 15 MB (issue 27): the busiest CUPTI recordings are excerpts (README's table)."""
    names = subprocess.run(
        ["git", "ls-files", "recordings", "gtop/demo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    size = sum((REPO / name).lstat().st_size for name in names)
    assert len(names) > 50 and size <= 15_000_000, (len(names), size)
