"""Copy a window of a recording into a new one
(``python3 tools/excerpt_recording.py SRC DST --from S --to S``).

Seconds count from the recording's first record. Rows that lie in the window are copied
whole, entities valid before its end kept, and the copy's metadata says it is an
excerpt (:func:`gtop.recordings.excerpt.excerpt`). How the committed recordings that are
excerpts were cut is in README's recordings table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gtop.recordings.excerpt import excerpt
from gtop.recordings.reader import RecordingError


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--from", dest="from_s", type=float, default=0.0, metavar="S")
    parser.add_argument("--to", dest="to_s", type=float, required=True, metavar="S")
    args = parser.parse_args()
    try:
        rows = excerpt(args.src, args.dst, args.from_s, args.to_s)
    except (RecordingError, OSError, ValueError) as exc:
        print(f"gtop: {exc}", file=sys.stderr)
        return 1
    before, after = args.src.stat().st_size, args.dst.stat().st_size
    print(f"{args.dst}: {after:,} bytes ({before:,} before), {sum(rows.values()):,} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
