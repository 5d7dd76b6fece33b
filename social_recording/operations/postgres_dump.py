"""Dagster's PostgreSQL database (runs, event logs, schedule and sensor state and cursors, the run
queue) dumped with `pg_dump -Fc` and restored with `pg_restore`, from Debian's postgresql-client.

The connection is the instance's own, `DAGSTER_POSTGRES_HOST/PORT/USER/PASSWORD/DB` (deploy's
dagster.yaml reads the same variables; `DAGSTER_POSTGRES_PASSWORD_FILE` may name a file holding the
password instead). The password reaches the tools through their environment (`PGPASSWORD`), never
their command line. `pg_dump` reads one transaction snapshot, so the dump is consistent even while
the daemon writes. The restore drops ownership and grants from the dump (`--no-owner
--no-privileges`): the objects belong to the role that restores them, whichever role made the dump.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from social_recording.domain.redaction import cap, scrub

VARIABLES = ("DAGSTER_POSTGRES_HOST", "DAGSTER_POSTGRES_PORT", "DAGSTER_POSTGRES_USER", "DAGSTER_POSTGRES_DB")
TIMEOUT_S = 3_600.0


class PostgresDumpError(RuntimeError):
    """A tool failed or is missing; the message never carries the password."""


@dataclass(frozen=True)
class PostgresTarget:
    host: str
    port: str
    user: str
    database: str
    password: str

    def __repr__(self) -> str:
        return f"PostgresTarget({self.describe()})"

    def describe(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    def tool_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(PGHOST=self.host, PGPORT=self.port, PGUSER=self.user, PGDATABASE=self.database,
                   PGCONNECT_TIMEOUT="10")
        if self.password:
            env["PGPASSWORD"] = self.password
        return env


def target_from_env(environ: Mapping[str, str] = os.environ) -> PostgresTarget | None:
    """The instance's PostgreSQL, or None when DAGSTER_POSTGRES_HOST is not set (an instance on SQLite)."""
    if not environ.get("DAGSTER_POSTGRES_HOST", "").strip():
        return None
    missing = [name for name in VARIABLES if not environ.get(name, "").strip()]
    if missing:
        raise PostgresDumpError(f"DAGSTER_POSTGRES_HOST is set but {', '.join(missing)} is not")
    password = environ.get("DAGSTER_POSTGRES_PASSWORD", "")
    password_file = environ.get("DAGSTER_POSTGRES_PASSWORD_FILE", "").strip()
    if password_file:
        try:
            password = Path(password_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise PostgresDumpError(f"DAGSTER_POSTGRES_PASSWORD_FILE={password_file!r}: {exc.strerror}") from None
    return PostgresTarget(environ["DAGSTER_POSTGRES_HOST"].strip(), environ["DAGSTER_POSTGRES_PORT"].strip(),
                          environ["DAGSTER_POSTGRES_USER"].strip(), environ["DAGSTER_POSTGRES_DB"].strip(), password)


def _run(target: PostgresTarget, args: list[str]) -> str:
    tool = shutil.which(args[0])
    if tool is None:
        raise PostgresDumpError(f"{args[0]} is not installed (Debian/Ubuntu: apt-get install postgresql-client)")
    proc = subprocess.run([tool, *args[1:]], env=target.tool_env(), capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    if proc.returncode != 0:
        why = scrub(proc.stderr.strip(), secrets=[target.password])
        raise PostgresDumpError(f"{args[0]} on {target.describe()} failed (exit {proc.returncode}): {cap(why, 500)}")
    return proc.stdout


def dump(target: PostgresTarget, path: Path) -> None:
    _run(target, ["pg_dump", "--format=custom", "--no-password", f"--file={path}"])


def table_count(target: PostgresTarget) -> int:
    """Tables in the database's public schema (0: a fresh database, ready for a restore)."""
    out = _run(target, ["psql", "--no-password", "--tuples-only", "--no-align", "--command",
                        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"])
    return int(out.strip() or 0)


def restore(target: PostgresTarget, path: Path, *, replace: bool) -> None:
    """Restore the dump into the database; `replace` drops what the dump holds first."""
    args = ["pg_restore", "--no-password", "--no-owner", "--no-privileges", "--exit-on-error",
            "--single-transaction", f"--dbname={target.database}"]
    if replace:
        args += ["--clean", "--if-exists"]
    _run(target, [*args, str(path)])
