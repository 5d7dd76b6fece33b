"""`python -m social_recording migrate`: bring the store's schema up to this release, before any service.

Opening a store already upgrades it in place (SQLite: ordered steps in one transaction, versioned by
`PRAGMA user_version`; MongoDB: idempotent steps, the version in `meta`), so every run process would
do it at its start. Running it once, as a one-shot step before the code server, the daemon and the
webserver start, makes the upgrade happen in one place and fail loudly there — a store newer than the
code, a server that refuses the credentials — instead of in the first run (docs/operations.md,
"Migrations and draining"). Idempotent: on a current store it changes nothing and says so.
Exit codes: 0 done, 2 a bad setting, 1 the store could not be migrated.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from social_recording.domain.redaction import cap, scrub
from social_recording.operations.store_command import run_store_command
from social_recording.settings import PREFIX
from social_recording.store import mask_url_password, open_store, parse_store_url
from social_recording.store.base import SchemaVersionError

NO_STORE = None
"""`schema_version_of` for a store that does not exist yet (the migration creates it)."""


@dataclass(frozen=True)
class MigrationReport:
    store: str
    """The store URL, password masked."""
    before: int | None
    after: int
    seconds: float

    def describe(self) -> str:
        if self.before is NO_STORE:
            return f"store {self.store}: created at schema version {self.after} ({self.seconds:.2f} s)"
        if self.before == self.after:
            return f"store {self.store}: already at schema version {self.after}, nothing to do"
        return (f"store {self.store}: migrated from schema version {self.before} to {self.after} "
                f"({self.seconds:.2f} s)")


class MigrationError(RuntimeError):
    """The store could not be opened or upgraded; the message names the store, never a password."""


def schema_version_of(url: str) -> int | None:
    """The schema version the store holds now, read without changing anything (None: no store yet)."""
    parsed = parse_store_url(url)
    if parsed.kind == "sqlite":
        assert parsed.path is not None
        path = Path(parsed.path)
        if not path.is_file():
            return NO_STORE
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
        finally:
            conn.close()
        return version if version or tables else NO_STORE
    from social_recording.store.mongo import META

    store = open_store_client(url)
    try:
        db = store.get_database(parsed.db_name)
        meta = db[META].find_one({"_id": "schema"})
        if meta is not None:
            return int(meta.get("version", 1))
        return 1 if "tokens" in db.list_collection_names() else NO_STORE
    finally:
        if parsed.kind == "mongodb":
            store.close()


def open_store_client(url: str) -> Any:
    """The pymongo (or shared mongomock) client the store URL names, for a read of its `meta`."""
    parsed = parse_store_url(url)
    if parsed.kind == "mongomock":
        from social_recording.store import _shared_mongomock_client

        return _shared_mongomock_client()
    from social_recording.store import OPEN_TIMEOUT_S
    from social_recording.store.mongo.connection import mongo_client

    assert parsed.url is not None  # a mongodb URL (parse_store_url)
    return mongo_client(parsed.url, serverSelectionTimeoutMS=int(OPEN_TIMEOUT_S * 1000))


def migrate(url: str) -> MigrationReport:
    """Run the store's migrations (opening it runs them) and report what changed."""
    shown = mask_url_password(url)
    started = time.monotonic()
    try:
        before = schema_version_of(url)
        store = open_store(url)
        try:
            after = schema_version_of(url)
        finally:
            store.close()
    except SchemaVersionError as exc:
        raise MigrationError(f"{PREFIX}STORE_URL={shown!r}: {exc}") from None
    except Exception as exc:
        raise MigrationError(f"{PREFIX}STORE_URL={shown!r}: cannot migrate the store: "
                             f"{type(exc).__name__}: {cap(scrub(str(exc), url), 300)}") from None
    assert after is not None
    return MigrationReport(shown, before, after, time.monotonic() - started)


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording migrate") -> int:
    return run_store_command(argv, prog=prog, doc=__doc__, verb="migrate",
                             action=lambda args, url: [migrate(url).describe()], failures=(MigrationError,))
