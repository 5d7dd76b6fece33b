"""`python -m social_recording record-settings PATH`: the settings `make dev` runs with, for `status`.

`make dev` validates the environment's settings and writes them beside its Dagster instance, secrets
left out, so `status` (another process, another shell) reports the deployment's settings.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording record-settings") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("path", type=Path, help="the .env file to write (its directory must exist)")
    args = parser.parse_args(argv)
    from social_recording.settings import BAD_SETTING_EXIT, read_for_command, record_settings

    written = read_for_command(lambda: record_settings(args.path))
    if written is None:
        return BAD_SETTING_EXIT
    print(f"settings for Dagster written to {args.path}: "
          + (", ".join(f"{k}={v}" for k, v in written.items()) or "every default"))
    return 0
