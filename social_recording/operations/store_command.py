"""The command line shared by `migrate`, `backup` and `restore`, the commands that act on the store the
settings name: their arguments, the settings read (a bad one exits 2 naming it), the action, and what
an error prints. Exit codes: 0 done, 2 a bad setting or a refusal, 1 a failure; an unexpected error
prints its type and message with the store URL's password scrubbed (docs/operations.md, "Backup and
restore").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from social_recording.domain.redaction import cap, scrub
from social_recording.settings import load_settings, read_for_command

EXIT_DONE, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2

Action = Callable[[argparse.Namespace, str], Sequence[str]]
"""What the command does with its arguments and the store URL; the lines it prints when done."""


def run_store_command(argv: Sequence[str] | None, *, prog: str, doc: str | None, verb: str, action: Action,
                      arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None,
                      refusals: tuple[type[Exception], ...] = (),
                      failures: tuple[type[Exception], ...] = ()) -> int:
    """Parse `argv`, read the settings and run `action`; `refusals` exit 2 ("VERB refused: …"),
    `failures` and any other error exit 1 ("VERB failed: …")."""
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    arguments(parser)
    args = parser.parse_args(argv)
    settings = read_for_command(load_settings)
    if settings is None:
        return EXIT_REFUSED
    try:
        lines = action(args, settings.store_url)
    except refusals as exc:
        print(f"{verb} refused: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except failures as exc:
        print(f"{verb} failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:
        print(f"{verb} failed: {type(exc).__name__}: {cap(scrub(str(exc), settings.store_url), 500)}",
              file=sys.stderr)
        return EXIT_FAILED
    for line in lines:
        print(line)
    return EXIT_DONE
