"""What every user of a shared SQLite file does the same way (the store, the lock backend, the rate
limiter's counters, the sandbox's state): connections that wait for other writers and use WAL, and
write transactions that take the write lock up front.

- WAL lets readers (lock probes, the gate) run while another process writes; it is a property of the
  file, so the first opener converts it. Several processes opening a new file at once race to
  convert it, and SQLite answers the losers "database is locked" at once, without waiting in the
  busy handler: the conversion is retried.
- `BEGIN IMMEDIATE` makes a check-then-write inside the transaction race-free against every other
  thread and process on the file, and makes a busy file wait in SQLite's busy handler before
  anything is read, instead of failing mid-transaction.

Imports nothing of ours, so every layer may use it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import tenacity


def is_busy(exc: BaseException) -> bool:
    """Whether an error means "another connection holds the file" (worth waiting for), not a fault."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text


def is_full(exc: BaseException) -> bool:
    """Whether SQLite refused a write because the disk (or the file's size limit) is full: the
    transaction was rolled back whole, and the same write succeeds once space is freed."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    return getattr(exc, "sqlite_errorname", "").startswith("SQLITE_FULL") or "disk is full" in str(exc)


def connect(path: str | os.PathLike[str], busy_timeout: float, *, foreign_keys: bool = False) -> sqlite3.Connection:
    """A connection for autocommit use (`isolation_level=None`, transactions explicit), usable from
    another thread than its opener's, waiting up to `busy_timeout` seconds for other writers, on a
    file in WAL mode with `synchronous=NORMAL` (durable at checkpoints, fast commits)."""
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        for attempt in tenacity.Retrying(
            retry=tenacity.retry_if_exception(is_busy),
            stop=tenacity.stop_after_delay(busy_timeout),
            wait=tenacity.wait_random(0.005, 0.05),
            reraise=True,
        ):
            with attempt:
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA synchronous = NORMAL")
        if foreign_keys:
            conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction on `conn` (opened with `isolation_level=None`): committed when the block
    ends, rolled back when it raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class ThreadConnections:
    """One connection per thread of this process to a file every process on the machine shares (the
    rate limiter's windows, the spend budget's counters). A forked child never uses its parent's
    connection (SQLite forbids carrying one across a fork): it opens its own. `prepare` runs on each
    new connection (e.g. the owner's schema, made once)."""

    def __init__(self, path: str | os.PathLike[str], busy_timeout: float, *, owner: str,
                 prepare: Callable[[sqlite3.Connection], None] | None = None) -> None:
        raw = os.fspath(path)
        if not raw or raw == ":memory:" or raw.startswith("file:"):
            raise ValueError(f"{owner} needs a file path shared by every process, got {raw!r}")
        self.path = os.path.abspath(raw)
        self._busy_timeout = busy_timeout
        self._prepare = prepare
        self._local = threading.local()

    def get(self) -> sqlite3.Connection:
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is not None and held[0] == os.getpid():
            return held[1]
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        conn = connect(self.path, self._busy_timeout)
        if self._prepare is not None:
            self._prepare(conn)
        self._local.conn = (os.getpid(), conn)
        return conn

    def close(self) -> None:
        """Close this thread's connection (a parent's, seen from a forked child, is left alone)."""
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is not None and held[0] == os.getpid():
            held[1].close()
            self._local.conn = None
