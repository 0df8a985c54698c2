"""Rewrite recordings in the current format, in place
(``python3 tools/convert_recordings.py [--recompress] FILE...``).

Each file older than the current format (with ``--recompress``, every file) is
converted by :func:`gtop.recordings.convert.convert` into a new file beside it, which
then replaces it; one line per file says its size before and after (and what a damaged
file lost). ``--recompress`` is how a recording written live (zstd level 3) is made
small to be kept: the committed recordings are stored so.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gtop.recordings.convert import convert
from gtop.recordings.reader import Recording, RecordingError
from gtop.recordings.schema import FORMAT_VERSION


def convert_in_place(path: Path, recompress: bool = False) -> str:
    """Convert ``path`` unless it is current (``recompress``: even then); one line on
    what was done."""
    with Recording(path) as rec:
        if rec.version >= FORMAT_VERSION and not recompress:
            return f"{path}: already format {rec.version}"
    tmp = path.with_name(f".{path.name}.converting")
    tmp.unlink(missing_ok=True)
    before = path.stat().st_size
    try:
        problems = convert(path, tmp)
        os.chmod(tmp, path.stat().st_mode & 0o777)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    lost = f"; {len(problems)} problems in the original: {problems[0]}" if problems else ""
    return f"{path}: {before:,} -> {path.stat().st_size:,} bytes{lost}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument(
        "--recompress", action="store_true", help="rewrite current files too (to compress them)"
    )
    args = parser.parse_args()
    status = 0
    for path in args.files:
        try:
            print(convert_in_place(path, args.recompress))
        except (RecordingError, OSError) as exc:
            print(f"gtop: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
