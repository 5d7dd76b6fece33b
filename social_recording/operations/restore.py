"""`python -m social_recording restore DIR [--force]`: load a `backup` back into the configured stores.

Restores into the store `SOCIAL_RECORDING_STORE_URL` names (the same kind as the dump: SQLite or
MongoDB) and, when the backup holds one, into Dagster's PostgreSQL (`DAGSTER_POSTGRES_*`). Both must
be empty — a fresh volume, a dropped database — unless `--force`, which replaces what they hold with
the backup: nothing is overwritten by accident. Stop the services (or `drain`) first. On MongoDB, with
the administrator's credentials given as the migrate step has them, the store URL's user is created
(a fresh server has none) before anything is loaded. Afterwards the store is opened once, which checks
its indexes and runs any migration a backup from an older release needs, and its counters are
recounted from its documents (docs/operations.md, "Backup and restore").
Exit codes: 0 restored, 2 a bad setting or a target that is not empty without --force, 1 a restore
that failed (DIR not a backup, a tool or a load that failed).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path

from pymongo.errors import OperationFailure

from social_recording.operations import mongo_dump, postgres_dump
from social_recording.operations.backup import sqlite_tables
from social_recording.operations.backup_manifest import (
    MONGO_DIR,
    POSTGRES_FILE,
    SQLITE_FILE,
    BackupError,
    BackupManifest,
)
from social_recording.operations.migrate import migrate, open_store_client
from social_recording.operations.store_command import run_store_command
from social_recording.store import mask_url_password, open_store, parse_store_url
from social_recording.store.mongo_app_user import (
    DATABASES_VAR,
    ROOT_PASSWORD_VAR,
    ROOT_USER_VAR,
    admin_from_environment,
    ensure_app_user,
)

AUTHENTICATION_FAILED = 18
"""MongoDB's (and FerretDB's) error code for a user or password it does not know."""


class TargetNotEmpty(BackupError):
    """The target holds data and --force was not given."""


def restore_store(url: str, manifest: BackupManifest, directory: Path, *, force: bool) -> None:
    parsed = parse_store_url(url)
    shown = mask_url_password(url)
    kind = "sqlite" if parsed.kind == "sqlite" else "mongodb"
    if kind != manifest.store.kind:
        raise BackupError(f"the backup holds a {manifest.store.kind} store but SOCIAL_RECORDING_STORE_URL={shown!r} "
                          f"names a {kind} one: point it at a {manifest.store.kind} store")
    if parsed.kind == "sqlite":
        assert parsed.path is not None
        target = Path(parsed.path)
        if target.exists() and not force:
            conn = sqlite3.connect(f"{target.resolve().as_uri()}?mode=ro", uri=True)
            try:
                held = {name: n for name, n in sqlite_tables(conn).items() if n}
            finally:
                conn.close()
            if held:
                raise TargetNotEmpty(f"the store file {target.resolve()} holds data ({_some(held)}): "
                                     "restore into a new path, or pass --force to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        src = sqlite3.connect(f"{(directory / SQLITE_FILE).resolve().as_uri()}?mode=ro", uri=True)
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)  # every page replaced under SQLite's own locks (other openers wait)
        finally:
            dst.close()
            src.close()
        return
    client = open_store_client(url)
    try:
        db = client.get_database(parsed.db_name)
        names = mongo_dump.dumped_collections(directory / MONGO_DIR)
        try:
            present = db.list_collection_names()
        except OperationFailure as exc:
            if exc.code != AUTHENTICATION_FAILED:
                raise
            raise BackupError(f"MongoDB refused the user of SOCIAL_RECORDING_STORE_URL={shown!r} ({exc}): on a "
                              f"fresh server that user does not exist yet; set {ROOT_USER_VAR} and "
                              f"{ROOT_PASSWORD_VAR}_FILE (as the migrate step has them) and restore again, "
                              "which creates it") from None
        held = {name: db[name].estimated_document_count() for name in names if name in present}
        held = {name: n for name, n in held.items() if n}
        if held and not force:
            raise TargetNotEmpty(f"MongoDB database {parsed.db_name!r} holds data ({_some(held)}): restore into an "
                                 "empty database, or pass --force to replace those collections")
        for name in names:
            db.drop_collection(name)
        mongo_dump.load_database(db, directory / MONGO_DIR)
    finally:
        if parsed.kind == "mongodb":
            client.close()


def app_user(url: str) -> list[str]:
    """The store URL's MongoDB user, created or updated first when the administrator's credentials are
    given (MONGO_ROOT_USER, MONGO_ROOT_PASSWORD_FILE, as the migrate step has them): on a fresh server
    it does not exist yet, and the migrate step, which creates it, would fill Dagster's database first."""
    admin = admin_from_environment()
    return [] if admin is None else [f"store: {ensure_app_user(url, admin, os.environ.get(DATABASES_VAR, ''))}"]


def recount(url: str) -> str:
    """The store's counters repaired from its documents: a dump taken while runs wrote holds each
    collection as of a different moment, so its counters may not match the documents it holds."""
    store = open_store(url)
    try:
        drift = store.reconcile_counts()
    finally:
        store.close()
    repaired = len(drift.repaired)
    return f"counters recounted ({repaired} repaired)" if repaired else "counters match the documents"


def _some(held: dict[str, int]) -> str:
    return ", ".join(f"{n} in {name}" for name, n in list(held.items())[:4])


def restore(url: str, directory: Path, *, force: bool) -> list[str]:
    manifest = BackupManifest.read(directory)
    lines = []
    target = postgres_dump.target_from_env()
    if manifest.dagster is not None:
        if target is None:
            raise BackupError(f"the backup holds Dagster's PostgreSQL ({manifest.dagster.source}) but "
                              "DAGSTER_POSTGRES_HOST is not set: set DAGSTER_POSTGRES_* to the database to restore into")
        if postgres_dump.table_count(target) and not force:
            raise TargetNotEmpty(f"{target.describe()} already holds tables: restore into a new database, or "
                                 "pass --force to replace what the dump holds")
    started = time.monotonic()
    if parse_store_url(url).kind == "mongodb":
        lines += app_user(url)
    restore_store(url, manifest, directory, force=force)
    report = migrate(url)
    lines.append(f"store {report.store}: restored from {directory}, at schema version {report.after}")
    lines.append(f"store {report.store}: {recount(url)}")
    if manifest.dagster is not None and target is not None:
        postgres_dump.restore(target, directory / POSTGRES_FILE, replace=force)
        lines.append(f"dagster instance {target.describe()}: restored from {POSTGRES_FILE} "
                     "(run `dagster instance migrate` when the backup comes from an older Dagster)")
    lines.append(f"restored in {time.monotonic() - started:.2f} s")
    return lines


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording restore") -> int:
    def arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("directory", type=Path, metavar="DIR", help="a directory `backup` wrote")
        parser.add_argument("--force", action="store_true",
                            help="replace what the store and the instance database hold with the backup")

    def act(args: argparse.Namespace, url: str) -> list[str]:
        return restore(url, args.directory, force=args.force)

    return run_store_command(argv, prog=prog, doc=__doc__, verb="restore", action=act, arguments=arguments,
                             refusals=(TargetNotEmpty,), failures=(BackupError, postgres_dump.PostgresDumpError))
