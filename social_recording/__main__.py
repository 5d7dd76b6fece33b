"""`python -m social_recording <command>`: the project's command line.

Commands:
  status   where convergence stands: the settings read, token URLs by status and platform, what the
           retry job takes next, the next retry (`--json` for scripts); `--url URL` for one URL's
           state and next step
  record-settings PATH
           validate the environment's settings and write them to PATH, secrets left out (`make dev`
           does, into its Dagster instance directory, where `status` reads them)
  migrate  bring the store's schema up to this release (idempotent; run before the services start)
  drain    stop every schedule and sensor of the code location and wait until no run is queued or
           in progress (`--timeout S`); before an upgrade or a move
  resume   give every schedule and sensor back its default status (after `drain`)
  backup   DIR: dump the store (MongoDB or SQLite) and Dagster's PostgreSQL into DIR
  restore  DIR: load such a dump back (into empty stores; `--force` replaces what is there)
  housekeeping is a daily schedule, not a command (docs/operations.md, "Retention")

The demo keeps its own entry point: `python -m social_recording.demo`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

USAGE = ("usage: python -m social_recording status [--json] [--next N | --url URL [--holders N]]\n"
         "       python -m social_recording record-settings PATH\n"
         "       python -m social_recording migrate\n"
         "       python -m social_recording drain [--timeout S] [--poll S]\n"
         "       python -m social_recording resume\n"
         "       python -m social_recording backup DIR\n"
         "       python -m social_recording restore DIR [--force]")

COMMANDS = {
    "status": "social_recording.status",
    "record-settings": "social_recording.record_settings",
    "migrate": "social_recording.operations.migrate",
    "drain": "social_recording.operations.drain",
    "resume": "social_recording.operations.resume",
    "backup": "social_recording.operations.backup",
    "restore": "social_recording.operations.restore",
}
"""Each command's module, imported only when that command runs (`status` never loads Dagster)."""

INSTANCE_SECRETS = ("DAGSTER_POSTGRES_PASSWORD",)
"""Read by Dagster's instance configuration (deploy/dagster.yaml) from the environment: a command that
opens the instance (drain, resume, backup, restore) takes it from DAGSTER_POSTGRES_PASSWORD_FILE too,
as the services do (the settings' own secrets are read with the settings)."""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__.strip() if __doc__ else USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    module = COMMANDS.get(command)
    if module is None:
        print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
        return 2
    from social_recording.secret_files import SecretFileError, load_secret_files

    try:
        load_secret_files(INSTANCE_SECRETS)
    except SecretFileError as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    run = importlib.import_module(module).main
    return int(run(rest, prog=f"python -m social_recording {command}"))


if __name__ == "__main__":
    raise SystemExit(main())
