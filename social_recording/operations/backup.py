"""`python -m social_recording backup DIR`: the store and Dagster's instance database, dumped into DIR.

What is dumped (docs/operations.md, "Backup and restore"):
- the store `SOCIAL_RECORDING_STORE_URL` names, the system of record: a SQLite store through SQLite's
  online backup API (a consistent copy while writers go on), a MongoDB store as canonical Extended
  JSON per collection with its indexes (`mongo_dump.py`, which says why not `mongodump`);
- Dagster's PostgreSQL (run history, schedule and sensor state and cursors, the run queue) with
  `pg_dump -Fc`, when `DAGSTER_POSTGRES_HOST` is set (`postgres_dump.py`).
Redis is not dumped: it holds only locks and rate-limit windows, which expire by themselves.

DIR must not exist or be empty; `manifest.json` is written last. Exit codes: 0 done, 2 a bad setting,
1 a backup that failed (a partial DIR is left for inspection, without a manifest).
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from social_recording.domain.models import utcnow
from social_recording.operations import mongo_dump, postgres_dump
from social_recording.operations.backup_manifest import (
    MONGO_DIR,
    POSTGRES_FILE,
    SQLITE_FILE,
    BackupError,
    BackupManifest,
    DagsterPart,
    StorePart,
)
from social_recording.operations.migrate import open_store_client, schema_version_of
from social_recording.operations.store_command import run_store_command
from social_recording.store import mask_url_password, parse_store_url


def sqlite_tables(conn: sqlite3.Connection) -> dict[str, int]:
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {name: int(conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]) for name in names}


def dump_store(url: str, directory: Path) -> StorePart:
    parsed = parse_store_url(url)
    shown = mask_url_password(url)
    version = schema_version_of(url)
    if parsed.kind == "sqlite":
        assert parsed.path is not None
        source = Path(parsed.path)
        if not source.is_file():
            raise BackupError(f"no store file at {source.resolve()}: nothing to back up")
        src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
        dst = sqlite3.connect(directory / SQLITE_FILE)
        try:
            src.backup(dst)  # SQLite's online backup: one consistent snapshot of every page
            counts = sqlite_tables(dst)
        finally:
            dst.close()
            src.close()
        return StorePart(kind="sqlite", source=shown, schema_version=version, counts=counts)
    client = open_store_client(url)
    try:
        counts = mongo_dump.dump_database(client.get_database(parsed.db_name), directory / MONGO_DIR)
    finally:
        if parsed.kind == "mongodb":
            client.close()
    return StorePart(kind="mongodb", source=shown, schema_version=version, counts=counts)


def backup(url: str, directory: Path) -> BackupManifest:
    started = time.monotonic()
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise BackupError(f"{directory} exists and is not an empty directory: choose a new one")
    directory.mkdir(parents=True, exist_ok=True)
    store = dump_store(url, directory)
    target = postgres_dump.target_from_env()
    dagster = None
    if target is not None:
        postgres_dump.dump(target, directory / POSTGRES_FILE)
        dagster = DagsterPart(kind="postgresql", source=target.describe())
    manifest = BackupManifest(created_at=utcnow(), store=store, dagster=dagster, seconds=time.monotonic() - started)
    manifest.write(directory)
    return manifest


def describe(manifest: BackupManifest, directory: Path) -> str:
    s = manifest.store
    what = ", ".join(f"{n} {name}" for name, n in s.counts.items())
    lines = [f"store {s.source} (schema version {s.schema_version}): {what}"]
    lines.append(f"dagster instance {manifest.dagster.source}: {POSTGRES_FILE}" if manifest.dagster else
                 "dagster instance: not on PostgreSQL (DAGSTER_POSTGRES_HOST unset), not dumped")
    lines.append(f"backup written to {directory} in {manifest.seconds:.2f} s")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording backup") -> int:
    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("directory", type=Path, metavar="DIR", help="a new (or empty) directory for the dump")

    def act(args: argparse.Namespace, url: str) -> list[str]:
        return [describe(backup(url, args.directory), args.directory)]

    return run_store_command(argv, prog=prog, doc=__doc__, verb="backup", action=act, arguments=arguments,
                             failures=(BackupError, postgres_dump.PostgresDumpError))
