"""`python -m social_recording <command>`: the project's command line.

Commands:
  status   where convergence stands: token URLs by status and platform, the longest-waiting
           elements, the next retry (`--json` for scripts); `--url URL` for one URL's state

The demo keeps its own entry point: `python -m social_recording.demo`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = "usage: python -m social_recording status [--json] [--oldest N | --url URL [--holders N]]"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip() if __doc__ else USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "status":
        from social_recording.status import main as status_main

        return status_main(rest)
    print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
