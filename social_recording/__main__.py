"""`python -m social_recording <command>`: the project's command line.

Commands:
  status   where convergence stands: the settings read, token URLs by status and platform, what the
           retry job takes next, the next retry (`--json` for scripts); `--url URL` for one URL's
           state and next step
  record-settings PATH
           validate the environment's settings and write them to PATH, secrets left out (`make dev`
           does, into its Dagster instance directory, where `status` reads them)

The demo keeps its own entry point: `python -m social_recording.demo`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

USAGE = ("usage: python -m social_recording status [--json] [--next N | --url URL [--holders N]]\n"
         "       python -m social_recording record-settings PATH")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip() if __doc__ else USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "status":
        from social_recording.status import main as status_main

        return status_main(rest)
    if command == "record-settings" and len(rest) == 1:
        from pathlib import Path

        from social_recording.settings import SettingsError, record_settings

        try:
            written = record_settings(Path(rest[0]))
        except SettingsError as exc:
            print(exc, file=sys.stderr)
            return 2
        print(f"settings for Dagster written to {rest[0]}: " + (", ".join(f"{k}={v}" for k, v in written.items())
                                                               or "every default"))
        return 0
    print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
