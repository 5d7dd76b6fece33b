"""`python -m social_recording migrate` on SQLite store files: a file of the previous schema is
upgraded once and says from which version to which, a second run does nothing, a missing store is
created, and a store written by a newer release is refused with the store named (exit 1), as is a
bad setting (exit 2)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from social_recording.store import SqliteStore
from social_recording.store.sqlite import MIGRATIONS, SCHEMA_VERSION

REPO = Path(__file__).resolve().parents[2]


def migrate(store_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOCIAL_RECORDING_", "DAGSTER_"))}
    env["SOCIAL_RECORDING_STORE_URL"] = store_url
    return subprocess.run([sys.executable, "-m", "social_recording", "migrate"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)


def previous_schema_file(path: Path) -> None:
    """A store file as the previous release left it: every migration but the last applied."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for step in MIGRATIONS[:-1]:
            step(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
        conn.execute("INSERT INTO tokens (address, created_at, updated_at) VALUES ('TokOld', '2026-01-01', '2026-01-01')")
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_migrate_upgrades_the_previous_schema_once(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    previous_schema_file(path)
    done = migrate(f"sqlite:///{path}")
    assert done.returncode == 0, done.stderr
    assert f"migrated from schema version {SCHEMA_VERSION - 1} to {SCHEMA_VERSION}" in done.stdout
    store = SqliteStore(path)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        assert store.status_counts().tokens == 1  # the counters the last step adds, built from the rows
    finally:
        store.close()
    again = migrate(f"sqlite:///{path}")
    assert again.returncode == 0 and f"already at schema version {SCHEMA_VERSION}, nothing to do" in again.stdout


def test_migrate_creates_a_missing_store(tmp_path: Path) -> None:
    done = migrate(f"sqlite:///{tmp_path / 'new' / 'store.db'}")
    assert done.returncode == 0 and f"created at schema version {SCHEMA_VERSION}" in done.stdout, done.stderr


def test_a_store_of_a_newer_release_and_a_bad_setting_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    done = migrate(f"sqlite:///{path}")
    assert done.returncode == 1
    assert str(path) in done.stderr and f"schema version {SCHEMA_VERSION + 1}, newer than this code's" in done.stderr
    bad = migrate("postgres://db/store")
    assert bad.returncode == 2 and "SOCIAL_RECORDING_STORE_URL" in bad.stderr
