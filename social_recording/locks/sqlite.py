"""SQLite lock backend (the embedded default): a `locks` table in a shared file.

Row = (key, owner token, expires_at epoch seconds). Acquire is one upsert inside `BEGIN IMMEDIATE`
that only overwrites an *expired* row, so a holder killed with SIGKILL blocks the key for at most
its TTL; in the same transaction a one-row counter hands out the acquisition's fencing token
(floored at the clock in microseconds, like the Redis backend, so a deleted file cannot make a new
token smaller than an old one). Extension requires the row to be ours AND unexpired: once expired a lease is lost even if
nobody took the key yet — the same as Redis, where an expired key is simply gone. Release deletes
only our own row.

The default configuration points this at the SQLite store's file, so the manager
owns only its table: WAL and busy_timeout let it live beside the store's writers, and it never
assumes it created the file. Connections are opened lazily (Dagster loads definitions without
touching the disk), pooled so that no connection is used by two threads at once, and never carried
into another process.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from social_recording.domain.bounds import above, at_least
from social_recording.locks.extender import LeasingLockManager
from social_recording.locks.outage import OUTAGE_S
from social_recording.sqlite_file import connect, immediate, is_busy

#: How long one statement waits for another writer of the same file (store or locks) before it fails.
#: A renewal that fails this way is retried until the lease nears its expiry (see extender).
BUSY_TIMEOUT_S = 5.0
#: Idle connections kept per process (threads that finish give theirs back): as many as the threads
#: that take and renew locks at once in a run (a token's URLs are recorded side by side by a pool of
#: 64), so a busy run reuses its connections instead of opening (and setting up) one per lock.
_POOL_MAX = 64
#: Expired rows (dead holders) are swept at most this often per process.
_PURGE_EVERY_S = 60.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS locks ("
    " key TEXT PRIMARY KEY,"
    " owner TEXT NOT NULL,"
    " expires_at REAL NOT NULL"
    ")",
    "CREATE TABLE IF NOT EXISTS lock_fence ("
    " id INTEGER PRIMARY KEY CHECK (id = 1),"
    " value INTEGER NOT NULL"
    ")",
)


class SqliteLockManager(LeasingLockManager):
    """`LockManager` on a SQLite file shared by every process on this machine."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = BUSY_TIMEOUT_S,
                 outage_s: float = OUTAGE_S) -> None:
        """`busy_timeout` is a parameter so fault tests can make a held database fail renewals fast;
        `outage_s` bounds how long a file busy past it is waited out (locks/outage.py)."""
        self._busy_timeout = float(above("busy_timeout", busy_timeout, 0, "seconds"))
        self.outage_s = float(at_least("outage_s", outage_s, 0, "seconds"))
        raw = os.fspath(path)
        if not raw or raw.strip() == "" or raw == ":memory:" or raw.startswith("file:"):
            raise ValueError(
                f"SqliteLockManager needs a file path shared by all processes, got {raw!r} "
                "(an in-memory database would lock nothing across processes)"
            )
        self.path = os.path.abspath(raw)
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._idle: list[sqlite3.Connection] = []
        self._inherited: list[sqlite3.Connection] = []
        self._schema_ready = False
        self._last_purge = 0.0

    def __repr__(self) -> str:
        return f"SqliteLockManager({self.path!r})"

    # ---- connections --------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        conn = connect(self.path, self._busy_timeout)
        try:
            if not self._schema_ready:
                for stmt in _SCHEMA:
                    conn.execute(stmt)
                self._schema_ready = True
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._pid != os.getpid():
                # Forked: the parent's connections must not be used (nor closed) here.
                self._inherited.extend(self._idle)
                self._idle = []
                self._pid = os.getpid()
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open()
        ok = False
        try:
            yield conn
            ok = True
        finally:
            if conn.in_transaction:
                try:
                    conn.rollback()
                except sqlite3.Error:
                    ok = False
            with self._lock:
                keep = ok and self._pid == os.getpid() and len(self._idle) < _POOL_MAX
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    # ---- primitives ---------------------------------------------------------------------------
    def acquire(self, key: str, owner: str, ttl: float) -> int:
        """A file busy past the busy timeout raises (an outage the caller waits out); it never reads
        as "held by someone else", which would skip a token whose key is free."""
        with self._conn() as conn, immediate(conn):
            now = time.time()
            if now - self._last_purge >= _PURGE_EVERY_S:
                # Rows of dead holders: expired rows count as absent anyway, so deleting them is safe.
                conn.execute("DELETE FROM locks WHERE expires_at <= ? AND key <> ?", (now, key))
                self._last_purge = now
            conn.execute(
                "INSERT INTO locks (key, owner, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at "
                "WHERE locks.expires_at <= ?",
                (key, owner, now + ttl, now),
            )
            taken = conn.execute("SELECT changes()").fetchone()[0] == 1
            fence = 0
            if taken:
                fence = int(conn.execute(
                    "INSERT INTO lock_fence (id, value) VALUES (1, ?) "
                    "ON CONFLICT (id) DO UPDATE SET value = max(lock_fence.value + 1, excluded.value) "
                    "RETURNING value",
                    (int(now * 1_000_000),),
                ).fetchone()[0])
            return fence

    def holds(self, key: str, owner: str) -> bool:
        with self._conn() as conn:
            row = conn.execute("SELECT owner, expires_at FROM locks WHERE key = ?", (key,)).fetchone()
        return row is not None and row[0] == owner and float(row[1]) > time.time()

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        with self._conn() as conn:
            now = time.time()
            cur = conn.execute(
                "UPDATE locks SET expires_at = ? WHERE key = ? AND owner = ? AND expires_at > ?",
                (now + ttl, key, owner, now),
            )
            return cur.rowcount == 1

    def release(self, key: str, owner: str) -> bool:
        with self._conn() as conn:
            cur = conn.execute("DELETE FROM locks WHERE key = ? AND owner = ?", (key, owner))
            return cur.rowcount == 1

    def may_be_free(self, key: str) -> bool:
        """A WAL read (takes no write lock), so waiters poll without competing with the store's writers."""
        with self._conn() as conn:
            row = conn.execute("SELECT expires_at FROM locks WHERE key = ?", (key,)).fetchone()
        return row is None or float(row[0]) <= time.time()

    def is_outage(self, exc: BaseException) -> bool:
        return is_busy(exc)

    def backend_name(self) -> str:
        return f"sqlite:///{self.path}"

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            mine = self._pid == os.getpid()
        if mine:
            for conn in idle:
                conn.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "busy_timeout": self._busy_timeout, "outage_s": self.outage_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], busy_timeout=state.get("busy_timeout", BUSY_TIMEOUT_S),  # type: ignore[misc]
                      outage_s=state.get("outage_s", OUTAGE_S))
