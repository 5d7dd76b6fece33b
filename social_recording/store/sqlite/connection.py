"""Connections and transactions: one connection per thread (and per process, after a fork), `BEGIN
IMMEDIATE` for every write, one snapshot for multi-statement reads, the migration on open. The base
of `SqliteStore`: every capability's methods build on these.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from social_recording.domain.bounds import above
from social_recording.sqlite_file import connect, immediate
from social_recording.store.base import SchemaVersionError
from social_recording.store.sqlite.queries import QUERIES
from social_recording.store.sqlite.schema import BUSY_TIMEOUT_SECONDS, MIGRATIONS, SCHEMA_VERSION


class _Conn:
    """A per-thread connection holder (weak-referenceable, so a finished thread's connection is
    freed with its thread-local while `close()` can still reach the live ones)."""

    __slots__ = ("conn", "pid", "__weakref__")

    def __init__(self, conn: sqlite3.Connection, pid: int) -> None:
        self.conn = conn
        self.pid = pid


class SqliteBase:
    """The connection handling `SqliteStore` is built on (and what its capabilities' methods use)."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> None:
        self._busy_timeout = above("busy_timeout", busy_timeout, 0, "seconds")
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

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction on this thread's connection (see `sqlite_file.immediate`), handed back
        as it is rather than wrapped in a second generator: each URL write enters it."""
        return immediate(self._conn())

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

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"
