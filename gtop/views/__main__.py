"""``python -m gtop.views FILE.gtop`` or ``python -m gtop.views --pid PID``: the UI alone.

For development and the terminal tests; users run the ``gtop`` command instead.
"""

from __future__ import annotations

import argparse
import sys

from gtop.collectors.live import LiveSource
from gtop.recordings.reader import Recording, RecordingError
from gtop.recordings.replay import ReplaySource
from gtop.views.app import run_app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gtop.views")
    parser.add_argument("recording", nargs="?", help="replay this .gtop file")
    parser.add_argument("--pid", type=int, help="watch this live process")
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--no-color", action="store_true")
    args = parser.parse_args(argv)
    if args.recording:
        try:
            source = ReplaySource(Recording(args.recording))
        except RecordingError as exc:
            print(f"gtop: {exc}", file=sys.stderr)
            return 2
    else:
        source = LiveSource(args.pid, args.interval, require_gpu=args.pid is None)
    return run_app(
        source, no_color=args.no_color, refresh_s=min(0.5, args.interval), start_pid=args.pid
    )


if __name__ == "__main__":
    sys.exit(main())
