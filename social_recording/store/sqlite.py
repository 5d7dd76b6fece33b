"""SqliteStore: the embedded default backend, stdlib sqlite3 on one file.

Safe across threads (one connection per thread) and across OS processes (WAL, a 30 s busy timeout,
`BEGIN IMMEDIATE` for every write so check-then-write never interleaves). The `social_urls` elements
of a token are the child table `token_urls`, and the cross-token state of each URL is `url_states`,
so every hot query (the retry selection, the dedupe gate, one element) rides an index.

One recording of one URL is ONE write transaction (`apply_url_write`): the fencing check, object
upserts, first metrics, the link replacement, the URL state and the element all commit together or
not at all, which also keeps the write lock short.

The health figures are counters in `store_counts`, moved by triggers inside the writing transaction
(docs/architecture.md, "Health figures"); the hourly recount repairs them in one transaction.

The schema is versioned with `PRAGMA user_version` and ordered migrations (`MIGRATIONS`): opening
an older file upgrades it in place inside one transaction; a file newer than this code is refused.

Every hot-path statement is built by one function in `QUERIES`; the store runs those same strings
and `explain()` shows SQLite's plan for them, which the index-use test checks.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from social_recording.domain.graph import ObjectKind, PlannedLink, SocialObject
from social_recording.domain.models import (
    OpenCall,
    PaidRequest,
    SocialUrl,
    TokenDoc,
    TokenLink,
    TokenProfile,
    UnresolvedValue,
    UrlState,
    utcnow,
)
from social_recording.domain.spend import SpendRow
from social_recording.domain.status import Cause, FetchStatus
from social_recording.sqlite_file import connect, immediate
from social_recording.store._codec import (
    OBJECT_COLLECTIONS,
    backfill_url_states,
    checked_metrics,
    dt_from_text,
    dt_to_text,
    held_back_counts,
    json_dumps,
    json_loads,
    legacy_cause,
    object_body,
    opt_dt_from_text,
    opt_dt_to_text,
    platform_or_none,
    unique_urls,
    url_state_fields_from_v2,
    waiting_parts,
)
from social_recording.store.base import (
    WAITING_COUNT_BOUND,
    Candidate,
    CandidateQuery,
    SchemaVersionError,
    SpendTotals,
    StatusCounts,
    UrlWrite,
    WaitingElement,
    WaitingElements,
    WriteOutcome,
    WriteResult,
    longest_waiting,
)
from social_recording.store.counts import (
    LINKS_KEY,
    METRICS_KEY,
    SEP,
    TOKENS_KEY,
    URLS,
    CountDrift,
    StoreCounts,
    differences,
    object_key,
)
from social_recording.store.write_refusal import (
    NO_STATE,
    StoredElement,
    StoredState,
    fence_refusal,
    state_refusal,
    url_write_refusal,
)

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another process's write transaction before failing."""

_CHUNK = 500
"""Bound on `?` per IN-list (SQLite's variable limit is far higher; this keeps statements small)."""

NEVER = ""
"""`checked_at` of an element never recorded: sorts before every timestamp, so one index range
(`checked_at <= cutoff`) selects never-recorded and due elements alike, oldest first."""
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


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _url_key_sql(row: str) -> str:
    """`counts.url_key` in SQL, for the element `row` (new / old in a trigger, a column list in a query)."""
    prefix = f"{row}." if row else ""
    return f"{_literal(URLS + SEP)} || coalesce({prefix}platform, '') || {_literal(SEP)} || {prefix}status"


_COUNTED: tuple[tuple[str, str], ...] = (
    ("tokens", _literal(TOKENS_KEY)),
    *((table, _literal(object_key(kind))) for kind, table in OBJECT_COLLECTIONS.items()),
    ("metrics", _literal(METRICS_KEY)),
    ("token_links", _literal(LINKS_KEY)),
)
"""Tables counted by their number of rows, with their counter's key (as SQL)."""


def _bump(key_sql: str, delta: int) -> str:
    return (f"INSERT INTO store_counts (key, n) VALUES ({key_sql}, {delta}) "
            "ON CONFLICT (key) DO UPDATE SET n = n + excluded.n;")


def _count_triggers() -> list[str]:
    """The counters follow every insert, delete and status change in the writing transaction itself,
    whichever statement makes it (the store's, a migration's, a tool's)."""
    out = [
        f"CREATE TRIGGER counted_token_urls_insert AFTER INSERT ON token_urls BEGIN {_bump(_url_key_sql('new'), 1)} END",
        f"CREATE TRIGGER counted_token_urls_delete AFTER DELETE ON token_urls BEGIN {_bump(_url_key_sql('old'), -1)} END",
        "CREATE TRIGGER counted_token_urls_update AFTER UPDATE OF status, platform ON token_urls "
        "WHEN old.status IS NOT new.status OR old.platform IS NOT new.platform "
        f"BEGIN {_bump(_url_key_sql('old'), -1)} {_bump(_url_key_sql('new'), 1)} END",
    ]
    for table, key in _COUNTED:
        out.append(f"CREATE TRIGGER counted_{table}_insert AFTER INSERT ON {table} BEGIN {_bump(key, 1)} END")
        out.append(f"CREATE TRIGGER counted_{table}_delete AFTER DELETE ON {table} BEGIN {_bump(key, -1)} END")
    return out


def q_recount() -> Sql:
    """Every counter recounted from the rows (the hourly reconciliation, and the upgrade that makes them)."""
    parts = [f"SELECT {_url_key_sql('')}, COUNT(*) FROM token_urls GROUP BY status, platform"]
    parts += [f"SELECT {key}, COUNT(*) FROM {table}" for table, key in _COUNTED]
    return " UNION ALL ".join(parts), []


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


MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migrate_to_v1, _migrate_to_v2, _migrate_to_v3, _migrate_to_v4, _migrate_to_v5, _migrate_to_v6, _migrate_to_v7,
    _migrate_to_v8,
)
"""MIGRATIONS[i] upgrades a file at `user_version` i to i + 1; append, never edit a released step."""
SCHEMA_VERSION = len(MIGRATIONS)

_TOKEN_COLS = "address, symbol, image, first_transfer_at, fingerprints, web, created_at, updated_at, fence"
_URL_COLS = "address, url, status, attempted_at, attempts, checked_at, cause, detail, fence"
_LINK_COLS = "token_address, object, object_id, entry_url, platform, subtype, link_depth, created_at"
_STATE_COLS = (
    "url, platform, status, attempted_at, attempts, source_token, fence, request_provider, request_id, "
    "request_submitted_at, updated_at, answer, answered_at, streak, engine_failures, version, open_call"
)
_CANDIDATE_COLS = "address, url, status, attempts, checked_at, platform, detail"

Sql = tuple[str, list[Any]]


def _marks(n: int) -> str:
    if n < 1:
        raise ValueError("an IN-list needs at least one value")
    return ",".join("?" * n)


def _table(kind: ObjectKind | str) -> str:
    try:
        return OBJECT_COLLECTIONS[ObjectKind(kind).value]
    except ValueError:
        raise ValueError(
            f"unknown object kind {kind!r}; expected one of {sorted(OBJECT_COLLECTIONS)}"
        ) from None


def q_token_by_address(address: str) -> Sql:
    return f"SELECT {_TOKEN_COLS} FROM tokens WHERE address = ?", [address]


def q_urls_by_address(address: str) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE address = ? ORDER BY position", [address]


def q_holders(url: str, limit: int) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE url = ? ORDER BY address LIMIT ?", [url, limit]


def q_element(address: str, url: str) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE address = ? AND url = ?", [address, url]


def q_existing_addresses(addresses: Sequence[str]) -> Sql:
    return f"SELECT address FROM tokens WHERE address IN ({_marks(len(addresses))})", list(addresses)


def q_url_state(url: str) -> Sql:
    """The dedupe gate and the per-URL budget: one primary-key lookup, whatever the holders."""
    return f"SELECT {_STATE_COLS} FROM url_states WHERE url = ?", [url]


_FAIR_ORDER = "ORDER BY checked_at, address, url"
"""Oldest first, never-recorded (`NEVER`) first, ties by address and URL: `_fair_order` in SQL."""


def q_due_by_status(status: str, checked_before: str, limit: int) -> Sql:
    """One status of the retry selection: a range of (status, checked_at), in index order, limited.
    Elements without a platform hold a non-canonical URL (our bug, isolated by the recorder): a retry
    cannot change them, so they are left to the health checks instead of blocking the queue."""
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND checked_at <= ? "
        f"AND platform IS NOT NULL {_FAIR_ORDER} LIMIT ?",
        [status, checked_before, limit],
    )


def q_oldest_by_status(status: str, checked_before: str, limit: int) -> Sql:
    """Health: the longest-waiting elements of one status, non-canonical ones included."""
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND checked_at <= ? {_FAIR_ORDER} LIMIT ?",
        [status, checked_before, limit],
    )


def q_due_by_status_platform(status: str, platform: str, checked_before: str, limit: int) -> Sql:
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND platform = ? AND cause = ? "
        f"AND checked_at <= ? {_FAIR_ORDER} LIMIT ?",
        [status, platform, Cause.NO_GENERATOR.value, checked_before, limit],
    )


def q_due_among_addresses(statuses: Sequence[str], addresses: Sequence[str], checked_before: str) -> Sql:
    """The retry selection narrowed to a few tokens: their elements by the (address, url) key, then
    filtered. The unary `+` keeps status and checked_at out of index choice: without statistics the
    planner would otherwise range over every due element of those statuses instead of a few tokens'."""
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE address IN ({_marks(len(addresses))}) "
        f"AND +status IN ({_marks(len(statuses))}) AND +checked_at <= ? AND platform IS NOT NULL",
        [*addresses, *statuses, checked_before],
    )


def q_count_held_back(status: str, checked_after: str, bound: int, platform: str | None = None) -> Sql:
    """Retry: the elements of one status (and platform, for `unsupported` narrowed to the cause "no
    generator") still inside their back-off, counted up to `bound` along the retry index."""
    if platform is None:
        where, args = "status = ? AND checked_at > ?", [status, checked_after]
    else:
        where = "status = ? AND platform = ? AND cause = ? AND checked_at > ?"
        args = [status, platform, Cause.NO_GENERATOR.value, checked_after]
    return _bounded_count(where), [*args, bound]


def q_count_held_back_among(statuses: Sequence[str], addresses: Sequence[str], checked_after: str) -> Sql:
    """`q_count_held_back` for a few tokens: their elements by the (address, url) key."""
    return (
        f"SELECT status, platform, cause FROM token_urls WHERE address IN ({_marks(len(addresses))}) "
        f"AND +status IN ({_marks(len(statuses))}) AND +checked_at > ? AND platform IS NOT NULL",
        [*addresses, *statuses, checked_after],
    )


_WAITING_COLS = "address, url, status, attempts, checked_at, created_at, platform, cause, detail"


def _waiting_where(
    status: str, since_before: str, *, recorded: bool, platform: str | None, canonical_only: bool
) -> tuple[str, list[Any]]:
    """Elements of one status (and, for `unsupported` narrowed to a platform, that platform with the
    cause "no generator") that waited since at or before `since_before`: recorded ones by their last
    recording (a (status, checked_at) range), never-recorded ones by their creation (the range of
    `checked_at = NEVER`, which only holds what no run has reached yet: small unless something is
    stuck, which is what a health check reports)."""
    clauses, args = ["status = ?"], [status]
    if platform is not None:
        clauses += ["platform = ?", "cause = ?"]
        args += [platform, Cause.NO_GENERATOR.value]
    elif canonical_only:
        # The unary `+` keeps this term out of index choice: the (status, checked_at) range is the
        # narrow one, a (status, platform) range would read every element of the status.
        clauses.append("+platform IS NOT NULL")
    if recorded:
        clauses.append("checked_at > ? AND checked_at <= ?")
        args += [NEVER, since_before]
    else:
        # NEVER written out, not bound: the planner takes the partial index of never-recorded
        # elements only when the query's terms visibly imply its condition.
        clauses.append(f"{_NEVER_RECORDED} AND created_at <= ?")
        args.append(since_before)
    return " AND ".join(clauses), args


def q_waiting(
    status: str, since_before: str, limit: int, recorded: bool, platform: str | None = None,
    canonical_only: bool = True,
) -> Sql:
    """Health: the longest-waiting elements of one range (see `_waiting_where`), oldest first."""
    where, args = _waiting_where(status, since_before, recorded=recorded, platform=platform,
                                 canonical_only=canonical_only)
    # Recorded ones in the full fair order (the index's): which of equal times make the limit never
    # depends on the order rows happen to be stored in (a restored store lists what the original did).
    # Never-recorded ones in creation order; `q_waiting_ties` completes the ties at the limit.
    order = "checked_at, address, url" if recorded else "created_at"
    return f"SELECT {_WAITING_COLS} FROM token_urls WHERE {where} ORDER BY {order} LIMIT ?", [*args, limit]


def q_waiting_ties(
    status: str, created_at: str, platform: str | None = None, canonical_only: bool = True,
) -> Sql:
    """Never-recorded elements created at exactly `created_at` (the last one `q_waiting` listed):
    with them, the oldest are the same whatever order equal creation times are stored in."""
    where, args = _waiting_where(status, created_at, recorded=False, platform=platform,
                                 canonical_only=canonical_only)
    return f"SELECT {_WAITING_COLS} FROM token_urls WHERE {where} AND created_at = ?", [*args, created_at]


def q_count_waiting(
    status: str, since_before: str, bound: int, recorded: bool, platform: str | None = None,
    canonical_only: bool = True,
) -> Sql:
    """Health: how many elements of one range waited past the cutoff, counting at most `bound`."""
    where, args = _waiting_where(status, since_before, recorded=recorded, platform=platform,
                                 canonical_only=canonical_only)
    return _bounded_count(where), [*args, bound]


def _bounded_count(where: str) -> str:
    """COUNT(*) of the first `?` rows matching `where`: the inner query stops at the bound and reads
    only the index it ranges over when that index holds every column named (health's indexes do)."""
    return f"SELECT COUNT(*) FROM (SELECT 1 FROM token_urls WHERE {where} LIMIT ?)"


def q_object_id_by_platform_key(kind: ObjectKind | str, platform_key: str) -> Sql:
    return f"SELECT id FROM {_table(kind)} WHERE platform_key = ?", [platform_key]


def q_object_by_id(kind: ObjectKind | str, object_id: int) -> Sql:
    return (
        f"SELECT id, platform, platform_key, subtype, doc, created_at FROM {_table(kind)} WHERE id = ?",
        [object_id],
    )


def q_metrics_of_object(kind: ObjectKind | str, object_id: str) -> Sql:
    return (
        "SELECT metric, value FROM metrics WHERE object = ? AND object_id = ?",
        [ObjectKind(kind).value, object_id],
    )


def q_links_by_token_entry(token_address: str, entry_url: str) -> Sql:
    """token_address narrows through the (token_address, created_at) prefix."""
    return (
        f"SELECT {_LINK_COLS} FROM token_links WHERE token_address = ? AND entry_url = ? "
        "ORDER BY link_depth, object, object_id",
        [token_address, entry_url],
    )


def q_delete_links(token_address: str, entry_url: str) -> Sql:
    return "DELETE FROM token_links WHERE token_address = ? AND entry_url = ?", [token_address, entry_url]


def q_unresolved_due(checked_before: str, limit: int) -> Sql:
    return (
        "SELECT address, field, value, reason, attempts, checked_at FROM unresolved_values "
        "WHERE checked_at <= ? ORDER BY checked_at, address, field LIMIT ?",
        [checked_before, limit],
    )


QUERIES: dict[str, Callable[..., Sql]] = {
    "token_by_address": q_token_by_address,
    "urls_by_address": q_urls_by_address,
    "element": q_element,
    "holders": q_holders,
    "existing_addresses": q_existing_addresses,
    "url_state": q_url_state,
    "due_by_status": q_due_by_status,
    "due_by_status_platform": q_due_by_status_platform,
    "oldest_by_status": q_oldest_by_status,
    "due_among_addresses": q_due_among_addresses,
    "object_id_by_platform_key": q_object_id_by_platform_key,
    "object_by_id": q_object_by_id,
    "metrics_of_object": q_metrics_of_object,
    "links_by_token_entry": q_links_by_token_entry,
    "delete_links": q_delete_links,
    "unresolved_due": q_unresolved_due,
    "waiting": q_waiting,
    "count_waiting": q_count_waiting,
    "count_held_back": q_count_held_back,
}
"""The hot-path statements, by name; `SqliteStore.explain(name, *params)` plans exactly these."""


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i : i + _CHUNK]


def _dedup(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _checked_text(value: datetime | None) -> str:
    return NEVER if value is None else dt_to_text(value)


def _checked_dt(value: str | None) -> datetime | None:
    return None if not value else dt_from_text(value)


def _url_from_row(row: Sequence[Any]) -> SocialUrl:
    _address, url, status, attempted_at, attempts, checked_at, cause, detail, fence = row
    return SocialUrl(
        url=url,
        status=FetchStatus(status),
        attempted_at=opt_dt_from_text(attempted_at),
        attempts=attempts,
        checked_at=_checked_dt(checked_at),
        cause=Cause(cause) if cause else None,
        detail=detail,
        fence=fence,
    )


def _state_from_row(row: Sequence[Any]) -> UrlState:
    (url, platform, status, attempted_at, attempts, source_token, fence, provider, request_id, submitted_at,
     updated_at, answer, answered_at, streak, engine_failures, version, open_call) = row
    request = None
    if provider and request_id and submitted_at:
        request = PaidRequest(provider=provider, request_id=request_id, submitted_at=dt_from_text(submitted_at))
    return UrlState(
        url=url,
        platform=platform,
        status=FetchStatus(status),
        attempted_at=opt_dt_from_text(attempted_at),
        attempts=attempts,
        source_token=source_token,
        fence=fence,
        request=request,
        open_call=None if not open_call else OpenCall.model_validate_json(open_call),
        updated_at=opt_dt_from_text(updated_at),
        answer=FetchStatus(answer) if answer else None,
        answered_at=opt_dt_from_text(answered_at),
        streak=streak,
        engine_failures=engine_failures,
        version=version,
    )


def _candidate_from_row(row: Sequence[Any]) -> Candidate:
    address, url, status, attempts, checked_at, platform, detail = row
    return Candidate(address, url, FetchStatus(status), attempts, _checked_dt(checked_at), platform, detail)


def _waiting_from_row(row: Sequence[Any]) -> WaitingElement:
    address, url, status, attempts, checked_at, created_at, platform, cause, detail = row
    recorded = bool(checked_at)
    return WaitingElement(
        address=address,
        url=url,
        status=FetchStatus(status),
        attempts=attempts,
        since=dt_from_text(checked_at if recorded else created_at),
        recorded=recorded,
        platform=platform,
        cause=Cause(cause) if cause else None,
        detail=detail,
    )


def _link_from_row(r: Sequence[Any]) -> TokenLink:
    return TokenLink(
        token_address=r[0],
        object=ObjectKind(r[1]),
        object_id=r[2],
        entry_url=r[3],
        platform=r[4],
        subtype=r[5],
        link_depth=r[6],
        created_at=dt_from_text(r[7]),
    )


def _link_row(link: TokenLink) -> tuple[Any, ...]:
    return (
        link.token_address,
        link.object.value,
        link.object_id,
        link.entry_url,
        link.platform,
        link.subtype,
        link.link_depth,
        dt_to_text(link.created_at),
    )


class _Conn:
    """A per-thread connection holder (weak-referenceable, so a finished thread's connection is
    freed with its thread-local while `close()` can still reach the live ones)."""

    __slots__ = ("conn", "pid", "__weakref__")

    def __init__(self, conn: sqlite3.Connection, pid: int) -> None:
        self.conn = conn
        self.pid = pid


@dataclass(frozen=True)
class _PreparedObject:
    """One planned link's object, ready for its insert: table, row values, checked metrics, depth."""

    kind: ObjectKind
    table: str
    row: tuple[Any, ...]
    """(platform, platform_key, subtype, doc json, created_at)"""
    metrics: Mapping[str, float]
    depth: int

    @classmethod
    def of(cls, pl: PlannedLink, stamp: str) -> _PreparedObject:
        obj = pl.obj
        return cls(
            kind=pl.kind,
            table=_table(pl.kind),
            row=(obj.platform.value, obj.platform_key, obj.subtype, json_dumps(object_body(obj)), stamp),
            metrics=checked_metrics(obj.metrics, obj.platform_key) if obj.metrics else {},
            depth=pl.depth,
        )


class SqliteStore:
    """The Store protocol on one SQLite file; see the module docstring for the concurrency model."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> None:
        if not busy_timeout > 0:
            raise ValueError(f"busy_timeout must be > 0 seconds, got {busy_timeout!r}")
        self._busy_timeout = busy_timeout
        raw = os.fspath(path)
        if not raw or raw == ":memory:" or raw.startswith("file:"):
            raise ValueError(f"SqliteStore needs a file path shared by every thread and process, got {raw!r}")
        self.path = Path(raw)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._holders: weakref.WeakSet[_Conn] = weakref.WeakSet()
        self._holders_lock = threading.Lock()
        self._closed = False
        self._migrate()

    # ----------------------------------------------------------------- connections / transactions

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, self._busy_timeout, foreign_keys=True)

    def _conn(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError(f"SqliteStore({str(self.path)!r}) is closed")
        holder: _Conn | None = getattr(self._local, "holder", None)
        pid = os.getpid()
        if holder is None or holder.pid != pid:
            # A forked child must not reuse its parent's connection: open its own.
            holder = _Conn(self._connect(), pid)
            self._local.holder = holder
            with self._holders_lock:
                self._holders.add(holder)
        return holder.conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on this thread's connection (see `sqlite_file.immediate`)."""
        with immediate(self._conn()) as conn:
            yield conn

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One snapshot for multi-statement reads (a token row and its url rows agree)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _migrate(self) -> None:
        with self._write() as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(
                    f"store file {str(self.path)!r} has schema version {version}, newer than this code's "
                    f"{SCHEMA_VERSION}: upgrade social_recording before opening it"
                )
            for step in MIGRATIONS[version:]:
                step(conn)
            if version != SCHEMA_VERSION:
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def schema_version(self) -> int:
        return int(self._conn().execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self._closed = True
        with self._holders_lock:
            holders = list(self._holders)
            self._holders.clear()
        for holder in holders:
            holder.conn.close()

    def explain(self, query_name: str, *params: Any) -> list[str]:
        """SQLite's plan (EXPLAIN QUERY PLAN detail lines) for the named hot-path statement."""
        try:
            build = QUERIES[query_name]
        except KeyError:
            raise ValueError(f"unknown query {query_name!r}; expected one of {sorted(QUERIES)}") from None
        sql, args = build(*params)
        rows = self._conn().execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
        return [str(row[3]) for row in rows]

    # ----------------------------------------------------------------- tokens

    def _token_from_rows(
        self, row: Sequence[Any], urls: list[SocialUrl], unresolved: list[UnresolvedValue]
    ) -> TokenDoc:
        address, symbol, image, first_transfer_at, fingerprints, web, created_at, updated_at, fence = row
        return TokenDoc(
            address=address,
            symbol=symbol,
            image=image,
            first_transfer_at=opt_dt_from_text(first_transfer_at),
            fingerprints=json_loads(fingerprints) or [],
            web=json_loads(web),
            social_urls=urls,
            unresolved=unresolved,
            created_at=opt_dt_from_text(created_at),
            updated_at=opt_dt_from_text(updated_at),
            fence=fence,
        )

    @staticmethod
    def _unresolved_of(conn: sqlite3.Connection, address: str) -> list[UnresolvedValue]:
        rows = conn.execute(
            "SELECT field, value, reason, attempts, checked_at FROM unresolved_values WHERE address = ? "
            "ORDER BY field",
            [address],
        ).fetchall()
        return [
            UnresolvedValue(field=f, value=v, reason=r, attempts=a, checked_at=_checked_dt(c))
            for f, v, r, a, c in rows
        ]

    def find_token(self, address: str) -> TokenDoc | None:
        with self._read() as conn:
            row = conn.execute(*q_token_by_address(address)).fetchone()
            if row is None:
                return None
            urls = [_url_from_row(r) for r in conn.execute(*q_urls_by_address(address))]
            unresolved = self._unresolved_of(conn, address)
        return self._token_from_rows(row, urls, unresolved)

    def find_existing_addresses(self, addresses: Sequence[str]) -> set[str]:
        wanted = _dedup(addresses)
        found: set[str] = set()
        if not wanted:
            return found
        conn = self._conn()
        for chunk in _chunks(wanted):
            found.update(row[0] for row in conn.execute(*q_existing_addresses(chunk)))
        return found

    def create_pending_token(self, profile: TokenProfile, now: datetime | None = None) -> bool:
        """Insert-only. The row, its pending url rows and its unresolved values commit together."""
        urls = unique_urls(profile.urls, profile.address)
        stamp = dt_to_text(now or utcnow())
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO tokens (address, symbol, image, first_transfer_at, fingerprints, web, "
                "created_at, updated_at, fence) VALUES (?, ?, ?, ?, '[]', NULL, ?, ?, 0) "
                "ON CONFLICT (address) DO NOTHING",
                [
                    profile.address,
                    profile.symbol,
                    profile.image,
                    opt_dt_to_text(profile.first_transfer_at),
                    stamp,
                    stamp,
                ],
            )
            if cur.rowcount != 1:
                return False
            conn.executemany(
                "INSERT INTO token_urls (address, url, status, attempted_at, attempts, position, platform, "
                "checked_at, fence, created_at) VALUES (?, ?, ?, NULL, 0, ?, ?, ?, 0, ?)",
                [
                    (profile.address, url, FetchStatus.PENDING.value, i, platform_or_none(url), NEVER, stamp)
                    for i, url in enumerate(urls)
                ],
            )
            conn.executemany(
                "INSERT INTO unresolved_values (address, field, value, reason, attempts, checked_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (address, field) DO NOTHING",
                [
                    (profile.address, v.field, v.value, v.reason, v.attempts, _checked_text(v.checked_at))
                    for v in profile.unresolved
                ],
            )
        return True

    # ----------------------------------------------------------------- elements and URL states

    def find_element(self, address: str, url: str) -> SocialUrl | None:
        row = self._conn().execute(*q_element(address, url)).fetchone()
        return None if row is None else _url_from_row(row)

    def addresses_with_fingerprint(self, fingerprint: str, limit: int = 100) -> list[str]:
        """The tokens carrying `fingerprint` (by the fingerprints index), in address order."""
        return [row[0] for row in self._conn().execute(
            "SELECT address FROM token_fingerprints WHERE fingerprint = ? ORDER BY address LIMIT ?",
            [fingerprint, limit])]

    def find_url_state(self, url: str) -> UrlState | None:
        row = self._conn().execute(*q_url_state(url)).fetchone()
        return None if row is None else _state_from_row(row)

    def find_holders(self, url: str, limit: int) -> list[tuple[str, SocialUrl]]:
        if limit < 1:
            return []
        return [(row[0], _url_from_row(row)) for row in self._conn().execute(*q_holders(url, limit))]

    def _refusal(self, conn: sqlite3.Connection, write: UrlWrite) -> WriteOutcome | None:
        """Why `write` may not touch its (address, url), or None when it may: the element's and its URL
        state's fences and the state's version, read in one statement."""
        row = conn.execute(
            "SELECT u.status, u.fence, s.fence, s.version FROM token_urls u LEFT JOIN url_states s ON s.url = u.url "
            "WHERE u.address = ? AND u.url = ?", [write.address, write.url]
        ).fetchone()
        if row is None:
            return url_write_refusal(None, NO_STATE, write.fence, write.expect_version)
        status, element_fence, state_fence, version = row
        state = NO_STATE if state_fence is None else StoredState(state_fence, version or 0)
        return url_write_refusal(StoredElement(status, element_fence), state, write.fence, write.expect_version)

    def apply_url_write(self, write: UrlWrite) -> WriteOutcome:
        stamp = dt_to_text(write.now)
        # Everything that needs no database is prepared before the write lock is taken (object bodies,
        # metric values, link fields), so the transaction only runs statements.
        graph = None if write.graph_links is None else [_PreparedObject.of(pl, stamp) for pl in write.graph_links]
        with self._write() as conn:
            refused = self._refusal(conn, write)
            if refused is not None:
                return refused
            links: tuple[TokenLink, ...] = ()
            if graph is not None:
                links = tuple(self._write_graph(conn, write.address, write.url, graph, write.now))
            elif write.copy_links_from is not None:
                links = tuple(self._copy_links(conn, write.address, write.url, write.copy_links_from, write.now))
            if write.state is not None:
                s = write.state
                req = s.request
                paid = 0 if write.spend is None else write.spend.requests
                conn.execute(
                    "INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
                    "request_provider, request_id, request_submitted_at, updated_at, answer, answered_at, streak, "
                    "engine_failures, open_call, paid_requests, version) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) "
                    "ON CONFLICT (url) DO UPDATE SET status = excluded.status, "
                    "attempted_at = excluded.attempted_at, attempts = excluded.attempts, "
                    "source_token = excluded.source_token, fence = excluded.fence, "
                    "request_provider = excluded.request_provider, request_id = excluded.request_id, "
                    "request_submitted_at = excluded.request_submitted_at, updated_at = excluded.updated_at, "
                    "answer = excluded.answer, answered_at = excluded.answered_at, streak = excluded.streak, "
                    "engine_failures = excluded.engine_failures, open_call = excluded.open_call, "
                    "paid_requests = url_states.paid_requests + excluded.paid_requests, version = url_states.version + 1",
                    [write.url, write.platform, s.status.value, opt_dt_to_text(s.attempted_at), s.attempts,
                     s.source_token, write.fence, None if req is None else req.provider,
                     None if req is None else req.request_id,
                     None if req is None else dt_to_text(req.submitted_at), stamp,
                     None if s.answer is None else s.answer.value, opt_dt_to_text(s.answered_at), s.streak,
                     s.engine_failures, None if s.open_call is None else s.open_call.model_dump_json(), paid],
                )
                if write.spend is not None:
                    line = write.spend
                    conn.execute("INSERT INTO spend_ledger (account, day, requests, cost_usd) VALUES (?, ?, ?, ?) "
                                 "ON CONFLICT (account, day) DO UPDATE SET requests = requests + excluded.requests, "
                                 "cost_usd = cost_usd + excluded.cost_usd",
                                 [line.account, line.day, line.requests, line.cost_usd])
            else:
                conn.execute("UPDATE url_states SET fence = max(fence, ?) WHERE url = ?", [write.fence, write.url])
            e = write.element
            cur = conn.execute(
                "UPDATE token_urls SET status = ?, attempts = ?, attempted_at = ?, checked_at = ?, cause = ?, "
                "detail = ?, fence = ? WHERE address = ? AND url = ? AND fence <= ? AND status <> ?",
                [e.status.value, e.attempts, opt_dt_to_text(e.attempted_at), dt_to_text(e.checked_at),
                 None if e.cause is None else e.cause.value, e.detail, write.fence, write.address, write.url,
                 write.fence, FetchStatus.OK.value],
            )
            if cur.rowcount != 1:  # cannot happen inside this transaction after _refusal; never half-apply
                raise RuntimeError(f"element {write.address}/{write.url} changed inside its own write transaction")
            conn.execute("UPDATE tokens SET updated_at = ? WHERE address = ?", [stamp, write.address])
        return WriteOutcome(WriteResult.APPLIED, links=links)

    def _upsert_object(self, conn: sqlite3.Connection, kind: ObjectKind, obj: SocialObject, stamp: str) -> str:
        return self._upsert_prepared(conn, _table(kind), [obj.platform.value, obj.platform_key, obj.subtype,
                                                          json_dumps(object_body(obj)), stamp])

    @staticmethod
    def _upsert_prepared(conn: sqlite3.Connection, table: str, row: Sequence[Any]) -> str:
        """Insert-if-absent by platform_key; the new row's id comes back from the insert itself, an
        existing row's from its unique key."""
        inserted = conn.execute(
            f"INSERT INTO {table} (platform, platform_key, subtype, doc, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform_key) DO NOTHING RETURNING id",
            row,
        ).fetchone()
        if inserted is not None:
            return str(inserted[0])
        return str(conn.execute(f"SELECT id FROM {table} WHERE platform_key = ?", [row[1]]).fetchone()[0])

    @staticmethod
    def _insert_metrics(
        conn: sqlite3.Connection, kind: ObjectKind, object_id: str, values: Mapping[str, float], stamp: str
    ) -> None:
        conn.executemany(
            "INSERT INTO metrics (object, object_id, metric, value, observed_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (object, object_id, metric) DO NOTHING",
            [(ObjectKind(kind).value, object_id, name, value, stamp) for name, value in values.items()],
        )

    def _write_graph(
        self, conn: sqlite3.Connection, address: str, url: str, graph: Sequence[_PreparedObject], now: datetime
    ) -> list[TokenLink]:
        links: list[TokenLink] = []
        metric_rows: list[tuple[Any, ...]] = []
        for p in graph:
            object_id = self._upsert_prepared(conn, p.table, p.row)
            metric_rows += [(p.kind.value, object_id, name, value, p.row[4]) for name, value in p.metrics.items()]
            links.append(
                TokenLink(
                    token_address=address,
                    object=p.kind,
                    object_id=object_id,
                    entry_url=url,
                    platform=p.row[0],
                    subtype=p.row[2],
                    link_depth=p.depth,
                    created_at=now,
                )
            )
        if metric_rows:
            conn.executemany(
                "INSERT INTO metrics (object, object_id, metric, value, observed_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (object, object_id, metric) DO NOTHING",
                metric_rows,
            )
        self._replace_links(conn, address, url, links)
        return links

    def _copy_links(
        self, conn: sqlite3.Connection, address: str, url: str, source: str, now: datetime
    ) -> list[TokenLink]:
        """Copy ONE source token's links (read before anything is deleted: a self-copy is harmless)."""
        rows = conn.execute(*q_links_by_token_entry(source, url)).fetchall()
        links = [
            _link_from_row(r).model_copy(update={"token_address": address, "created_at": now}) for r in rows
        ]
        self._replace_links(conn, address, url, links)
        return links

    @staticmethod
    def _replace_links(conn: sqlite3.Connection, address: str, url: str, links: Sequence[TokenLink]) -> None:
        conn.execute(*q_delete_links(address, url))
        if links:
            conn.executemany(
                f"INSERT INTO token_links ({_LINK_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_link_row(link) for link in links],
            )

    @staticmethod
    def _state_fence_refusal(conn: sqlite3.Connection, url: str, fence: int) -> WriteResult | None:
        """The URL state's own writes are fenced whatever its version (write_refusal.py)."""
        row = conn.execute("SELECT fence FROM url_states WHERE url = ?", [url]).fetchone()
        refused = state_refusal(NO_STATE if row is None else StoredState(fence=row[0]), fence, None)
        return None if refused is None else refused.result

    def save_paid_request(self, url: str, platform: str, fence: int, request: PaidRequest) -> WriteResult:
        with self._write() as conn:
            refused = self._state_fence_refusal(conn, url, fence)
            if refused is not None:
                return refused
            conn.execute(
                "INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
                "request_provider, request_id, request_submitted_at, updated_at, version) "
                "VALUES (?, ?, ?, NULL, 0, NULL, ?, ?, ?, ?, ?, 1) "
                "ON CONFLICT (url) DO UPDATE SET fence = excluded.fence, "
                "request_provider = excluded.request_provider, request_id = excluded.request_id, "
                "request_submitted_at = excluded.request_submitted_at, updated_at = excluded.updated_at, "
                "open_call = NULL, version = url_states.version + 1",
                [url, platform, FetchStatus.PENDING.value, fence, request.provider, request.request_id,
                 dt_to_text(request.submitted_at), dt_to_text(utcnow())],
            )
        return WriteResult.APPLIED

    def save_open_call(self, url: str, platform: str, fence: int, call: OpenCall) -> WriteResult:
        with self._write() as conn:
            refused = self._state_fence_refusal(conn, url, fence)
            if refused is not None:
                return refused
            conn.execute(
                "INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
                "open_call, updated_at, version) VALUES (?, ?, ?, NULL, 0, NULL, ?, ?, ?, 1) "
                "ON CONFLICT (url) DO UPDATE SET fence = excluded.fence, open_call = excluded.open_call, "
                "updated_at = excluded.updated_at, version = url_states.version + 1",
                [url, platform, FetchStatus.PENDING.value, fence, call.model_dump_json(), dt_to_text(utcnow())],
            )
        return WriteResult.APPLIED

    def select_candidates(self, query: CandidateQuery) -> list[Candidate]:
        cutoff = dt_to_text(query.checked_before)
        rows: list[Sequence[Any]] = []
        with self._read() as conn:
            if query.addresses is not None:
                statuses = sorted(s.value for s in query.statuses)
                for chunk in _chunks(_dedup(list(query.addresses))):
                    rows += conn.execute(*q_due_among_addresses(statuses, chunk, cutoff)).fetchall()
                candidates = [
                    c for c in map(_candidate_from_row, rows)
                    if c.status is not FetchStatus.UNSUPPORTED or self._unsupported_ok(conn, query, c)
                ]
            else:
                for status in sorted(query.statuses):
                    if status is FetchStatus.UNSUPPORTED and query.unsupported_platforms is not None:
                        for platform in sorted(query.unsupported_platforms):
                            rows += conn.execute(
                                *q_due_by_status_platform(status.value, platform, cutoff, query.limit)
                            ).fetchall()
                    else:
                        rows += conn.execute(*q_due_by_status(status.value, cutoff, query.limit)).fetchall()
                candidates = [_candidate_from_row(r) for r in rows]
        candidates.sort(key=_fair_order)
        return candidates[: query.limit]

    @staticmethod
    def _unsupported_ok(conn: sqlite3.Connection, query: CandidateQuery, c: Candidate) -> bool:
        if query.unsupported_platforms is None:
            return True
        row = conn.execute("SELECT cause FROM token_urls WHERE address = ? AND url = ?", [c.address, c.url]).fetchone()
        return c.platform in query.unsupported_platforms and row is not None and row[0] == Cause.NO_GENERATOR.value

    def count_held_back(self, query: CandidateQuery, bound: int) -> int:
        if bound < 1:
            return 0
        after = dt_to_text(query.checked_before)
        count = 0
        with self._read() as conn:
            if query.addresses is not None:
                statuses = sorted(s.value for s in query.statuses)
                for chunk in _chunks(_dedup(list(query.addresses))):
                    for status, platform, cause in conn.execute(*q_count_held_back_among(statuses, chunk, after)):
                        count += int(held_back_counts(query, FetchStatus(status), platform, cause))
                return min(count, bound)
            for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
                if count >= bound:
                    break
                sql = q_count_held_back(status.value, after, bound - count, platform)
                count += int(conn.execute(*sql).fetchone()[0])
        return min(count, bound)

    def oldest_elements(
        self, statuses: Collection[FetchStatus], limit: int, checked_before: datetime | None = None
    ) -> list[Candidate]:
        if limit < 1 or not statuses:
            return []
        cutoff = dt_to_text(checked_before or datetime.max.replace(tzinfo=utcnow().tzinfo))
        conn = self._conn()
        rows: list[Sequence[Any]] = []
        for status in sorted({FetchStatus(s) for s in statuses}):
            rows += conn.execute(*q_oldest_by_status(status.value, cutoff, limit)).fetchall()
        return sorted(map(_candidate_from_row, rows), key=_fair_order)[:limit]

    def status_counts(self) -> StatusCounts:
        counts = self.counts()
        return StatusCounts(counts.by_platform, counts.tokens)

    def counts(self) -> StoreCounts:
        return StoreCounts.of(self._conn().execute("SELECT key, n FROM store_counts").fetchall())

    def reconcile_counts(self) -> CountDrift:
        """The recount and the repair in one write transaction: no writer changes a row (nor, through
        the triggers, a counter) between the two, so the repaired counters are exact. The write lock
        is held for the recount's time (a fraction of a second at a million tokens), hourly."""
        with self._write() as conn:
            started = time.perf_counter()
            recounted = {key: int(n) for key, n in conn.execute(*q_recount())}
            kept = {key: int(n) for key, n in conn.execute("SELECT key, n FROM store_counts")}
            found = differences(kept, recounted)
            conn.executemany(
                "INSERT INTO store_counts (key, n) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET n = excluded.n",
                [(key, n) for key, (_kept, n) in found.items()],
            )
            took = time.perf_counter() - started
        return CountDrift(found, frozenset(), took)

    def spend_rows(self, since_day: str) -> list[SpendRow]:
        rows = self._conn().execute("SELECT account, day, requests, cost_usd FROM spend_ledger WHERE day >= ? "
                                    "ORDER BY account, day", [since_day]).fetchall()
        return [SpendRow(str(a), str(d), int(n), float(c)) for a, d, n, c in rows]

    def spend_totals(self) -> SpendTotals:
        with self._read() as conn:
            ledger = conn.execute("SELECT account, SUM(requests) FROM spend_ledger GROUP BY account").fetchall()
            states = conn.execute("SELECT platform, SUM(paid_requests) FROM url_states WHERE paid_requests > 0 "
                                  "GROUP BY platform").fetchall()
        return SpendTotals({str(a): int(n) for a, n in ledger}, {str(p): int(n) for p, n in states})

    def waiting_elements(
        self, query: CandidateQuery, *, canonical_only: bool = True, count_bound: int = WAITING_COUNT_BOUND
    ) -> WaitingElements:
        if query.addresses is not None:
            raise ValueError("waiting_elements looks at every token: query.addresses must be None")
        if count_bound < 1:
            raise ValueError(f"count_bound must be >= 1, got {count_bound!r}")
        cutoff = dt_to_text(query.checked_before)
        count = 0
        rows: list[Sequence[Any]] = []
        with self._read() as conn:
            for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
                for recorded in (False, True):
                    if count < count_bound:
                        counted = q_count_waiting(status.value, cutoff, count_bound - count, recorded, platform,
                                                  canonical_only)
                        count += int(conn.execute(*counted).fetchone()[0])
                    listed = q_waiting(status.value, cutoff, query.limit, recorded, platform, canonical_only)
                    got = conn.execute(*listed).fetchall()
                    if not recorded and len(got) >= query.limit:
                        got += conn.execute(*q_waiting_ties(status.value, got[-1][5], platform,
                                                            canonical_only)).fetchall()
                    rows += got
        return longest_waiting(map(_waiting_from_row, rows), count, count_bound, query.limit)

    # ----------------------------------------------------------------- unresolved raw values

    def _token_fence_refusal(self, conn: sqlite3.Connection, address: str, fence: int) -> WriteResult | None:
        row = conn.execute("SELECT fence FROM tokens WHERE address = ?", [address]).fetchone()
        if row is None:
            return WriteResult.NO_ELEMENT
        refused = fence_refusal(row[0], fence)
        if refused is not None:
            return refused.result
        conn.execute("UPDATE tokens SET fence = ? WHERE address = ?", [fence, address])
        return None

    def add_resolved_url(self, address: str, field: str, url: str, fence: int, now: datetime) -> WriteResult:
        stamp = dt_to_text(now)
        with self._write() as conn:
            refused = self._token_fence_refusal(conn, address, fence)
            if refused is not None:
                return refused
            position = conn.execute(
                "SELECT coalesce(max(position), -1) + 1 FROM token_urls WHERE address = ?", [address]
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO token_urls (address, url, status, attempted_at, attempts, position, platform, "
                "checked_at, fence, created_at) VALUES (?, ?, ?, NULL, 0, ?, ?, ?, 0, ?) "
                "ON CONFLICT (address, url) DO NOTHING",
                [address, url, FetchStatus.PENDING.value, position, platform_or_none(url), NEVER, stamp],
            )
            conn.execute("DELETE FROM unresolved_values WHERE address = ? AND field = ?", [address, field])
            conn.execute("UPDATE tokens SET updated_at = ? WHERE address = ?", [stamp, address])
        return WriteResult.APPLIED

    def update_unresolved(
        self, address: str, value: UnresolvedValue, fence: int, *, drop: bool = False
    ) -> WriteResult:
        with self._write() as conn:
            refused = self._token_fence_refusal(conn, address, fence)
            if refused is not None:
                return refused
            if drop:
                conn.execute("DELETE FROM unresolved_values WHERE address = ? AND field = ?", [address, value.field])
            else:
                conn.execute(
                    "INSERT INTO unresolved_values (address, field, value, reason, attempts, checked_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (address, field) DO UPDATE SET value = excluded.value, "
                    "reason = excluded.reason, attempts = excluded.attempts, checked_at = excluded.checked_at",
                    [address, value.field, value.value, value.reason, value.attempts,
                     _checked_text(value.checked_at)],
                )
        return WriteResult.APPLIED

    def select_unresolved(self, checked_before: datetime, limit: int) -> list[tuple[str, UnresolvedValue]]:
        if limit < 1:  # (SQLite reads a negative LIMIT as "no limit")
            return []
        rows = self._conn().execute(*q_unresolved_due(dt_to_text(checked_before), limit)).fetchall()
        return [
            (a, UnresolvedValue(field=f, value=v, reason=r, attempts=n, checked_at=_checked_dt(c)))
            for a, f, v, r, n, c in rows
        ]

    # ----------------------------------------------------------------- objects and metrics

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """Insert-if-absent by platform_key, then read the id, in one write transaction, so
        concurrent callers all get the one row's id."""
        with self._write() as conn:
            return self._upsert_object(conn, kind, obj, dt_to_text(now or utcnow()))

    def get_object(self, kind: ObjectKind, object_id: str) -> dict[str, Any] | None:
        try:
            rowid = int(object_id)
        except (TypeError, ValueError):
            return None
        row = self._conn().execute(*q_object_by_id(kind, rowid)).fetchone()
        if row is None:
            return None
        oid, platform, platform_key, subtype, doc, created_at = row
        return {
            "id": str(oid),
            "platform": platform,
            "platform_key": platform_key,
            "subtype": subtype,
            **json_loads(doc),
            "created_at": dt_from_text(created_at),
        }

    def count_objects(self, kind: ObjectKind) -> int:
        return self._counter(object_key(kind))

    def _counter(self, key: str) -> int:
        row = self._conn().execute("SELECT n FROM store_counts WHERE key = ?", [key]).fetchone()
        return 0 if row is None else int(row[0])

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        values = checked_metrics(metrics, object_id)
        if not values:
            return
        with self._write() as conn:
            self._insert_metrics(conn, kind, object_id, values, dt_to_text(observed_at))

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]:
        return {
            name: float(value) for name, value in self._conn().execute(*q_metrics_of_object(kind, object_id))
        }

    def count_metrics(self) -> int:
        return self._counter(METRICS_KEY)

    # ----------------------------------------------------------------- token_links

    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
        rows = self._conn().execute(*q_links_by_token_entry(token_address, entry_url)).fetchall()
        return [_link_from_row(r) for r in rows]

    def count_links(self) -> int:
        return self._counter(LINKS_KEY)

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"


def _fair_order(c: Candidate) -> tuple[str, str, str]:
    """Oldest first; never-recorded elements before all others; address and URL break ties."""
    return (NEVER if c.checked_at is None else dt_to_text(c.checked_at), c.address, c.url)
