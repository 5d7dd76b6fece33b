"""SqliteStore: the embedded default backend (DESIGN §2), stdlib sqlite3 on one file.

Safe across threads (one connection per thread) and across OS processes (WAL, a 30 s busy timeout,
`BEGIN IMMEDIATE` for every write so check-then-write never interleaves). The embedded
`social_urls` array of the Mongo schema is the child table `token_urls`, so the hot queries
(status IN, url IN) ride indexes exactly as the multikey indexes do in Mongo (seed 004 §1.4).

Every hot-path statement is built by one function in `QUERIES`; the store runs those same strings
and `explain()` shows SQLite's plan for them, which the index-use test checks.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import SocialUrl, TokenDoc, TokenLink, TokenProfile, utcnow
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import (
    OBJECT_COLLECTIONS,
    checked_metrics,
    dt_from_text,
    dt_to_text,
    json_dumps,
    json_loads,
    object_body,
    opt_dt_from_text,
    opt_dt_to_text,
    status_query,
    unique_urls,
)

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another process's write transaction before failing."""

_CHUNK = 500
"""Bound on `?` per IN-list (SQLite's variable limit is far higher; this keeps statements small)."""

_SCHEMA: tuple[str, ...] = (
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

_TOKEN_COLS = "address, symbol, image, first_transfer_at, fingerprints, web, created_at, updated_at"
_URL_COLS = "address, url, status, attempted_at, attempts"
_LINK_COLS = "token_address, object, object_id, entry_url, platform, subtype, link_depth, created_at"

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


def q_tokens_by_addresses(addresses: Sequence[str]) -> Sql:
    return f"SELECT {_TOKEN_COLS} FROM tokens WHERE address IN ({_marks(len(addresses))})", list(addresses)


def q_urls_by_address(address: str) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE address = ? ORDER BY position", [address]


def q_urls_by_addresses(addresses: Sequence[str]) -> Sql:
    return (
        f"SELECT {_URL_COLS} FROM token_urls WHERE address IN ({_marks(len(addresses))}) "
        "ORDER BY address, position",
        list(addresses),
    )


def q_existing_addresses(addresses: Sequence[str]) -> Sql:
    return f"SELECT address FROM tokens WHERE address IN ({_marks(len(addresses))})", list(addresses)


def q_addresses_by_url_statuses(
    statuses: Collection[str], addresses: Sequence[str] | None = None, limit: int | None = None
) -> Sql:
    """Seed 004 §1.4: status IN is a set of equalities and rides the status index (never `!= ok`)."""
    sql = f"SELECT DISTINCT address FROM token_urls WHERE status IN ({_marks(len(statuses))})"
    args: list[Any] = [str(s) for s in statuses]
    if addresses is not None:
        sql += f" AND address IN ({_marks(len(addresses))})"
        args += list(addresses)
    sql += " ORDER BY address"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return sql, args


def q_addresses_by_social_urls(urls: Sequence[str]) -> Sql:
    return f"SELECT DISTINCT address FROM token_urls WHERE url IN ({_marks(len(urls))})", list(urls)


def q_update_url_element(address: str, url: str, status: str, attempted_at: str | None) -> Sql:
    """H-015: one element only. attempts counts invocations that made an external call."""
    if attempted_at is None:
        return "UPDATE token_urls SET status = ? WHERE address = ? AND url = ?", [status, address, url]
    return (
        "UPDATE token_urls SET status = ?, attempted_at = ?, attempts = attempts + 1 "
        "WHERE address = ? AND url = ?",
        [status, attempted_at, address, url],
    )


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
    """Seed 004 §1.5: token_address narrows through the (token_address, created_at) prefix."""
    return (
        f"SELECT {_LINK_COLS} FROM token_links WHERE token_address = ? AND entry_url = ? "
        "ORDER BY link_depth, object, object_id",
        [token_address, entry_url],
    )


def q_delete_links(token_address: str, entry_url: str) -> Sql:
    return "DELETE FROM token_links WHERE token_address = ? AND entry_url = ?", [token_address, entry_url]


QUERIES: dict[str, Callable[..., Sql]] = {
    "token_by_address": q_token_by_address,
    "tokens_by_addresses": q_tokens_by_addresses,
    "urls_by_address": q_urls_by_address,
    "urls_by_addresses": q_urls_by_addresses,
    "existing_addresses": q_existing_addresses,
    "addresses_by_url_statuses": q_addresses_by_url_statuses,
    "addresses_by_social_urls": q_addresses_by_social_urls,
    "update_url_element": q_update_url_element,
    "object_id_by_platform_key": q_object_id_by_platform_key,
    "object_by_id": q_object_by_id,
    "metrics_of_object": q_metrics_of_object,
    "links_by_token_entry": q_links_by_token_entry,
    "delete_links": q_delete_links,
}
"""The hot-path statements, by name; `SqliteStore.explain(name, *params)` plans exactly these."""


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i : i + _CHUNK]


def _dedup(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


class _Conn:
    """A per-thread connection holder (weak-referenceable, so a finished thread's connection is
    freed with its thread-local while `close()` can still reach the live ones)."""

    __slots__ = ("conn", "pid", "__weakref__")

    def __init__(self, conn: sqlite3.Connection, pid: int) -> None:
        self.conn = conn
        self.pid = pid


class SqliteStore:
    """The Store protocol on one SQLite file; see the module docstring for the concurrency model."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        raw = os.fspath(path)
        if not raw or raw == ":memory:" or raw.startswith("file:"):
            raise ValueError(f"SqliteStore needs a file path shared by every thread and process, got {raw!r}")
        self.path = Path(raw)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._holders: weakref.WeakSet[_Conn] = weakref.WeakSet()
        self._holders_lock = threading.Lock()
        self._closed = False
        self._create_schema()

    # ----------------------------------------------------------------- connections / transactions

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

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
        """BEGIN IMMEDIATE takes the write lock up front: a check-then-insert inside cannot race
        another thread or process, and waiting happens in the busy handler, not mid-transaction."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One snapshot for multi-statement reads (a token row and its url rows agree)."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _create_schema(self) -> None:
        with self._write() as conn:
            for stmt in _SCHEMA:
                conn.execute(stmt)

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

    @staticmethod
    def _token_from_rows(row: sqlite3.Row | tuple[Any, ...], urls: list[SocialUrl]) -> TokenDoc:
        address, symbol, image, first_transfer_at, fingerprints, web, created_at, updated_at = row
        return TokenDoc(
            address=address,
            symbol=symbol,
            image=image,
            first_transfer_at=opt_dt_from_text(first_transfer_at),
            fingerprints=json_loads(fingerprints) or [],
            web=json_loads(web),
            social_urls=urls,
            created_at=opt_dt_from_text(created_at),
            updated_at=opt_dt_from_text(updated_at),
        )

    @staticmethod
    def _url_from_row(row: tuple[Any, ...]) -> SocialUrl:
        _address, url, status, attempted_at, attempts = row
        return SocialUrl(
            url=url,
            status=FetchStatus(status),
            attempted_at=opt_dt_from_text(attempted_at),
            attempts=attempts,
        )

    def _urls_by_addresses(
        self, conn: sqlite3.Connection, addresses: Sequence[str]
    ) -> dict[str, list[SocialUrl]]:
        out: dict[str, list[SocialUrl]] = {a: [] for a in addresses}
        for chunk in _chunks(addresses):
            for row in conn.execute(*q_urls_by_addresses(chunk)):
                out[row[0]].append(self._url_from_row(row))
        return out

    def _load_tokens(self, conn: sqlite3.Connection, addresses: Sequence[str]) -> list[TokenDoc]:
        """Whole documents for `addresses`, ordered by address."""
        if not addresses:
            return []
        rows: dict[str, tuple[Any, ...]] = {}
        for chunk in _chunks(addresses):
            for row in conn.execute(*q_tokens_by_addresses(chunk)):
                rows[row[0]] = row
        urls = self._urls_by_addresses(conn, sorted(rows))
        return [self._token_from_rows(rows[a], urls[a]) for a in sorted(rows)]

    def find_token(self, address: str) -> TokenDoc | None:
        with self._read() as conn:
            row = conn.execute(*q_token_by_address(address)).fetchone()
            if row is None:
                return None
            urls = [self._url_from_row(r) for r in conn.execute(*q_urls_by_address(address))]
        return self._token_from_rows(row, urls)

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
        """L-3: insert-only. The row and its pending url rows commit together or not at all."""
        urls = unique_urls(profile.urls, profile.address)
        stamp = dt_to_text(now or utcnow())
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO tokens (address, symbol, image, first_transfer_at, fingerprints, web, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, '[]', NULL, ?, ?) "
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
                "INSERT INTO token_urls (address, url, status, attempted_at, attempts, position) "
                "VALUES (?, ?, ?, NULL, 0, ?)",
                [(profile.address, url, FetchStatus.PENDING.value, i) for i, url in enumerate(urls)],
            )
        return True

    def record_url_result(
        self, address: str, url: str, status: FetchStatus, attempted_at: datetime | None
    ) -> bool:
        status = FetchStatus(status)
        with self._write() as conn:
            cur = conn.execute(
                *q_update_url_element(address, url, status.value, opt_dt_to_text(attempted_at))
            )
            if cur.rowcount != 1:
                return False
            conn.execute(
                "UPDATE tokens SET updated_at = ? WHERE address = ?", [dt_to_text(utcnow()), address]
            )
        return True

    def find_tokens_by_url_statuses(
        self,
        statuses: Collection[FetchStatus],
        addresses: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[TokenDoc]:
        query = status_query(statuses, addresses, limit)
        if query is None:
            return []
        wanted, among = query
        with self._read() as conn:
            if among is None:
                found = [r[0] for r in conn.execute(*q_addresses_by_url_statuses(wanted, None, limit))]
            else:
                hits: set[str] = set()
                for chunk in _chunks(among):
                    hits.update(
                        r[0] for r in conn.execute(*q_addresses_by_url_statuses(wanted, chunk, limit))
                    )
                found = sorted(hits)[:limit] if limit is not None else sorted(hits)
            return self._load_tokens(conn, found)

    def find_tokens_by_social_urls(self, urls: Sequence[str]) -> list[TokenDoc]:
        wanted = _dedup(urls)
        if not wanted:
            return []
        with self._read() as conn:
            found: set[str] = set()
            for chunk in _chunks(wanted):
                found.update(r[0] for r in conn.execute(*q_addresses_by_social_urls(chunk)))
            ordered = sorted(found)
            by_address = self._urls_by_addresses(conn, ordered)
        return [TokenDoc(address=a, social_urls=by_address[a]) for a in ordered]

    # ----------------------------------------------------------------- objects and metrics

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """R-009 / DESIGN §2: insert-if-absent by platform_key, then read the id, in one write
        transaction, so concurrent callers all get the one row's id."""
        table = _table(kind)
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO {table} (platform, platform_key, subtype, doc, created_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform_key) DO NOTHING",
                [
                    obj.platform.value,
                    obj.platform_key,
                    obj.subtype,
                    json_dumps(object_body(obj)),
                    dt_to_text(now or utcnow()),
                ],
            )
            row = conn.execute(*q_object_id_by_platform_key(kind, obj.platform_key)).fetchone()
        return str(row[0])

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
        row = self._conn().execute(f"SELECT COUNT(*) FROM {_table(kind)}").fetchone()
        return int(row[0])

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        values = checked_metrics(metrics, object_id)
        if not values:
            return
        kind_value = ObjectKind(kind).value
        stamp = dt_to_text(observed_at)
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO metrics (object, object_id, metric, value, observed_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (object, object_id, metric) DO NOTHING",
                [(kind_value, object_id, name, value, stamp) for name, value in values.items()],
            )

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]:
        return {
            name: float(value) for name, value in self._conn().execute(*q_metrics_of_object(kind, object_id))
        }

    # ----------------------------------------------------------------- token_links

    def delete_links(self, token_address: str, entry_url: str) -> int:
        with self._write() as conn:
            return conn.execute(*q_delete_links(token_address, entry_url)).rowcount

    def append_links(self, links: Sequence[TokenLink]) -> None:
        if not links:
            return
        with self._write() as conn:
            conn.executemany(
                f"INSERT INTO token_links ({_LINK_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        link.token_address,
                        link.object.value,
                        link.object_id,
                        link.entry_url,
                        link.platform,
                        link.subtype,
                        link.link_depth,
                        dt_to_text(link.created_at),
                    )
                    for link in links
                ],
            )

    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
        rows = self._conn().execute(*q_links_by_token_entry(token_address, entry_url)).fetchall()
        return [
            TokenLink(
                token_address=r[0],
                object=ObjectKind(r[1]),
                object_id=r[2],
                entry_url=r[3],
                platform=r[4],
                subtype=r[5],
                link_depth=r[6],
                created_at=dt_from_text(r[7]),
            )
            for r in rows
        ]

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"
