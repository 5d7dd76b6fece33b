"""The schema, versioned with `PRAGMA user_version` and ordered migrations (`MIGRATIONS`): opening an
older file upgrades it in place inside one transaction; a file newer than this code is refused
(`connection.py`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from social_recording.domain.models import utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store._codec import (
    OBJECT_COLLECTIONS,
    backfill_url_states,
    dt_from_text,
    dt_to_text,
    legacy_cause,
    opt_dt_from_text,
    opt_dt_to_text,
    platform_or_none,
    url_state_fields_from_v2,
)
from social_recording.store.sqlite.count_triggers import _count_triggers, q_recount

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another process's write transaction before failing."""

NEVER = ""
"""`checked_at` and `due_at` of an element never recorded: sorts before every timestamp, so one index
range (`due_at <= due_by`) selects never-recorded and due elements alike, longest due first."""
_NEVER_RECORDED = f"checked_at = '{NEVER}'"

_SCHEMA_V1: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS tokens (
        address TEXT PRIMARY KEY NOT NULL,
        symbol TEXT,
        image TEXT,
        first_transfer_at TEXT,
        fingerprints TEXT NOT NULL DEFAULT '[]',
        web TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS idx_tokens_discovered ON tokens (created_at DESC)",
    """CREATE TABLE IF NOT EXISTS token_urls (
        address TEXT NOT NULL REFERENCES tokens (address) ON DELETE CASCADE,
        url TEXT NOT NULL,
        status TEXT NOT NULL,
        attempted_at TEXT,
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        position INTEGER NOT NULL,
        UNIQUE (address, url)
    )""",
    "CREATE INDEX IF NOT EXISTS idx_token_urls_status ON token_urls (status, address)",
    "CREATE INDEX IF NOT EXISTS idx_token_urls_url ON token_urls (url, address)",
    *(
        f"""CREATE TABLE IF NOT EXISTS {table} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform TEXT NOT NULL,
        platform_key TEXT NOT NULL UNIQUE,
        subtype TEXT NOT NULL,
        doc TEXT NOT NULL,
        created_at TEXT NOT NULL
    )"""
        for table in OBJECT_COLLECTIONS.values()
    ),
    """CREATE TABLE IF NOT EXISTS metrics (
        object TEXT NOT NULL,
        object_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        observed_at TEXT NOT NULL,
        PRIMARY KEY (object, object_id, metric)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS token_links (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        token_address TEXT NOT NULL,
        object TEXT NOT NULL,
        object_id TEXT NOT NULL,
        entry_url TEXT NOT NULL,
        platform TEXT NOT NULL,
        subtype TEXT NOT NULL,
        link_depth INTEGER NOT NULL CHECK (link_depth >= 0),
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS idx_links_token_linked ON token_links (token_address, created_at)",
)


def _migrate_to_v1(conn: sqlite3.Connection) -> None:
    """The first schema. `IF NOT EXISTS` everywhere: files made before versioning existed are v1."""
    for stmt in _SCHEMA_V1:
        conn.execute(stmt)


def _cause_text(cause: Cause | None) -> str | None:
    return None if cause is None else cause.value


def _migrate_to_v2(conn: sqlite3.Connection) -> None:
    """Fencing, fair retry order, per-URL state, unresolved raw values.

    New element columns (platform, checked_at, cause, detail, fence, created_at), a token fence, the
    `url_states` table (built from the elements already stored) and `unresolved_values`.
    """
    for column, decl in (
        ("platform", "TEXT"),
        ("checked_at", f"TEXT NOT NULL DEFAULT '{NEVER}'"),
        ("cause", "TEXT"),
        ("detail", "TEXT"),
        ("fence", "INTEGER NOT NULL DEFAULT 0"),
        ("created_at", "TEXT"),
    ):
        conn.execute(f"ALTER TABLE token_urls ADD COLUMN {column} {decl}")
    conn.execute("ALTER TABLE tokens ADD COLUMN fence INTEGER NOT NULL DEFAULT 0")
    rows = conn.execute(
        "SELECT u.address, u.url, u.status, u.attempted_at, u.attempts, t.created_at "
        "FROM token_urls u JOIN tokens t ON t.address = u.address"
    ).fetchall()
    conn.executemany(
        "UPDATE token_urls SET platform = ?, checked_at = ?, cause = ?, created_at = ? WHERE address = ? AND url = ?",
        [(platform_or_none(url), attempted_at or NEVER, _cause_text(legacy_cause(status)), created, address, url)
         for address, url, status, attempted_at, _attempts, created in rows],
    )
    conn.execute("DROP INDEX IF EXISTS idx_token_urls_status")
    # (address, url) close both retry indexes, so the fair order is the index order and LIMIT stops early.
    conn.execute("CREATE INDEX idx_token_urls_due ON token_urls (status, checked_at, address, url)")
    conn.execute(
        "CREATE INDEX idx_token_urls_platform_due ON token_urls (status, platform, cause, checked_at, address, url)"
    )
    conn.execute(
        """CREATE TABLE url_states (
            url TEXT PRIMARY KEY NOT NULL,
            platform TEXT NOT NULL,
            status TEXT NOT NULL,
            attempted_at TEXT,
            attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            source_token TEXT,
            fence INTEGER NOT NULL DEFAULT 0,
            request_provider TEXT,
            request_id TEXT,
            request_submitted_at TEXT,
            updated_at TEXT NOT NULL
        ) WITHOUT ROWID"""
    )
    states = backfill_url_states(
        (address, url, FetchStatus(status), opt_dt_from_text(attempted_at), attempts)
        for address, url, status, attempted_at, attempts, _created in rows
    )
    stamp = dt_to_text(utcnow())
    conn.executemany(
        "INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?)",
        [(s.url, s.platform, s.status.value, opt_dt_to_text(s.attempted_at), s.attempts, s.source_token, stamp)
         for s in states],
    )
    conn.execute(
        """CREATE TABLE unresolved_values (
            address TEXT NOT NULL REFERENCES tokens (address) ON DELETE CASCADE,
            field TEXT NOT NULL,
            value TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            attempts INTEGER NOT NULL DEFAULT 0,
            checked_at TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (address, field)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX idx_unresolved_due ON unresolved_values (checked_at)")


def _migrate_to_v3(conn: sqlite3.Connection) -> None:
    """The per-URL state machine's fields: the window's best answer and its anchor, the failure
    streak, engine failures, a version for conditional writes (`url_state_fields_from_v2`)."""
    for column, decl in (
        ("answer", "TEXT"),
        ("answered_at", "TEXT"),
        ("streak", "INTEGER NOT NULL DEFAULT 0 CHECK (streak >= 0)"),
        ("engine_failures", "INTEGER NOT NULL DEFAULT 0 CHECK (engine_failures >= 0)"),
        ("version", "INTEGER NOT NULL DEFAULT 1"),
    ):
        conn.execute(f"ALTER TABLE url_states ADD COLUMN {column} {decl}")
    rows = conn.execute("SELECT url, status, attempted_at, attempts FROM url_states").fetchall()
    updates = []
    for url, status, attempted_at, attempts in rows:
        answer, answered_at, streak = url_state_fields_from_v2(FetchStatus(status), opt_dt_from_text(attempted_at),
                                                               attempts)
        updates.append((None if answer is None else answer.value, opt_dt_to_text(answered_at), streak, url))
    conn.executemany("UPDATE url_states SET answer = ?, answered_at = ?, streak = ? WHERE url = ?", updates)


def _migrate_to_v4(conn: sqlite3.Connection) -> None:
    """Health's bounded reads read indexes only: the retry index ends with the platform (the canonical
    filter), and never-recorded elements have a partial index in creation order, so listing the
    oldest of them stops at the limit however many there are."""
    conn.execute("DROP INDEX idx_token_urls_due")
    conn.execute("CREATE INDEX idx_token_urls_due ON token_urls (status, checked_at, address, url, platform)")
    conn.execute("CREATE INDEX idx_token_urls_never ON token_urls (status, created_at, platform, checked_at) "
                 f"WHERE {_NEVER_RECORDED}")


def _migrate_to_v5(conn: sqlite3.Connection) -> None:
    """Counters of the health figures (`store/counts.py`), kept by triggers, built from the rows."""
    conn.execute("CREATE TABLE store_counts (key TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID")
    for stmt in _count_triggers():
        conn.execute(stmt)
    conn.execute("INSERT INTO store_counts (key, n) " + q_recount()[0])


def _migrate_to_v6(conn: sqlite3.Connection) -> None:
    """A paid call recorded before it leaves (`OpenCall`, as JSON), on the URL state."""
    conn.execute("ALTER TABLE url_states ADD COLUMN open_call TEXT")


def _migrate_to_v7(conn: sqlite3.Connection) -> None:
    """The spend ledger (one counter per billing account and UTC day) and each URL state's count of
    the paid requests behind it, moved together by the write that records a call
    (docs/architecture.md, "Spend budgets"). Nothing was counted before: both start at zero."""
    conn.execute("CREATE TABLE spend_ledger (account TEXT NOT NULL, day TEXT NOT NULL, requests INTEGER NOT NULL, "
                 "cost_usd REAL NOT NULL, PRIMARY KEY (account, day)) WITHOUT ROWID")
    conn.execute("ALTER TABLE url_states ADD COLUMN paid_requests INTEGER NOT NULL DEFAULT 0")


_FINGERPRINTS_OF = "SELECT DISTINCT j.value, {row}.address FROM json_each({row}.fingerprints) j WHERE j.type = 'text'"


def _migrate_to_v8(conn: sqlite3.Connection) -> None:
    """The tokens' fingerprints indexed, as the Mongo store's multikey index on `fingerprints` does: a
    side table of (fingerprint, address) kept by triggers in the writing transaction, so finding the
    tokens that share a fingerprint reads an index, however many tokens there are."""
    conn.execute("CREATE TABLE token_fingerprints (fingerprint TEXT NOT NULL, address TEXT NOT NULL, "
                 "PRIMARY KEY (fingerprint, address)) WITHOUT ROWID")
    conn.execute("INSERT INTO token_fingerprints (fingerprint, address) "
                 "SELECT DISTINCT j.value, t.address FROM tokens t, json_each(t.fingerprints) j WHERE j.type = 'text'")
    conn.execute("CREATE TRIGGER fingerprints_insert AFTER INSERT ON tokens BEGIN "
                 f"INSERT OR IGNORE INTO token_fingerprints {_FINGERPRINTS_OF.format(row='new')}; END")
    conn.execute("CREATE TRIGGER fingerprints_update AFTER UPDATE OF fingerprints ON tokens BEGIN "
                 "DELETE FROM token_fingerprints WHERE address = old.address; "
                 f"INSERT OR IGNORE INTO token_fingerprints {_FINGERPRINTS_OF.format(row='new')}; END")
    conn.execute("CREATE TRIGGER fingerprints_delete AFTER DELETE ON tokens BEGIN "
                 "DELETE FROM token_fingerprints WHERE address = old.address; END")


def _migrate_to_v9(conn: sqlite3.Connection) -> None:
    """Back-off as one stored due time: `due_at` on every element, dated as the back-off dated it
    until now (the last recording plus the base interval; never-recorded: `NEVER`, due at once), and
    the retry indexes over it instead of `checked_at` (docs/architecture.md, "Back-off: one due time")."""
    conn.execute(f"ALTER TABLE token_urls ADD COLUMN due_at TEXT NOT NULL DEFAULT '{NEVER}'")
    rows = conn.execute(f"SELECT rowid, checked_at FROM token_urls WHERE NOT {_NEVER_RECORDED}")
    while batch := rows.fetchmany(10_000):
        conn.executemany("UPDATE token_urls SET due_at = ? WHERE rowid = ?",
                         [(dt_to_text(dt_from_text(checked) + DEFAULT_MIN_INTERVAL), rowid) for rowid, checked in batch])
    conn.execute("DROP INDEX idx_token_urls_due")
    conn.execute("DROP INDEX idx_token_urls_platform_due")
    conn.execute(f"CREATE INDEX idx_token_urls_due ON token_urls ({DUE_INDEX})")
    conn.execute(f"CREATE INDEX idx_token_urls_platform_due ON token_urls ({PLATFORM_DUE_INDEX})")


def _migrate_to_v10(conn: sqlite3.Connection) -> None:
    """The spend ledger's requests whose answer never came (a holder died or lost its URL after
    recording the call), entered when a newer holder's write removes the open call; none before."""
    conn.execute("ALTER TABLE spend_ledger ADD COLUMN unanswered INTEGER NOT NULL DEFAULT 0")


def _migrate_to_v11(conn: sqlite3.Connection) -> None:
    """Never-recorded elements in the full fair order: the partial index closes with (address, url),
    and `unsupported` narrowed to a platform has one of its own, so listing the oldest of them stops
    at the limit however many share a creation time (a batch of tokens made at one instant no longer
    reads back whole), and every count over them reads an index only (docs/architecture.md, "Health
    figures")."""
    conn.execute("DROP INDEX idx_token_urls_never")
    conn.execute(f"CREATE INDEX idx_token_urls_never ON token_urls ({NEVER_INDEX}) WHERE {_NEVER_RECORDED}")
    conn.execute(f"CREATE INDEX idx_token_urls_platform_never ON token_urls ({PLATFORM_NEVER_INDEX}) "
                 f"WHERE {_NEVER_RECORDED}")


DUE_INDEX = "status, due_at, address, url, platform"
"""The retry selection's index: one range per status, in the fair order (longest due first, then
address and URL), ending with the platform (the canonical filter) so health reads the index only."""
PLATFORM_DUE_INDEX = "status, platform, cause, due_at, address, url"
"""The retry selection of `unsupported` narrowed to a platform and the cause "no generator"."""
NEVER_INDEX = "status, created_at, address, url, platform, cause, checked_at"
"""Health's never-recorded elements (a partial index: `checked_at = NEVER` only) in the order they
wait in (creation, then address and URL); the columns after it make every count index-only."""
PLATFORM_NEVER_INDEX = "status, platform, cause, created_at, address, url, checked_at"
"""The same for `unsupported` narrowed to a platform and the cause "no generator"."""


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_v1, _migrate_to_v2, _migrate_to_v3, _migrate_to_v4, _migrate_to_v5, _migrate_to_v6, _migrate_to_v7,
    _migrate_to_v8, _migrate_to_v9, _migrate_to_v10, _migrate_to_v11,
)
"""MIGRATIONS[i] upgrades a file at `user_version` i to i + 1; append, never edit a released step."""
SCHEMA_VERSION = len(MIGRATIONS)
