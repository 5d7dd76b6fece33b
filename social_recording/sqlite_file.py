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
from collections.abc import Iterator
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
