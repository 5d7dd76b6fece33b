"""Fault injection on a SQLite file shared by the tests: another connection holding the write lock."""

from __future__ import annotations

import os
import sqlite3
import threading
import time


def hold_write_lock(path: str | os.PathLike[str], seconds: float, started: threading.Event) -> None:
    """Take the file's write lock (BEGIN IMMEDIATE) for `seconds`, setting `started` once held: every
    other writer waits in its busy handler, and fails once its busy timeout is shorter."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute("BEGIN IMMEDIATE")
        started.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
    finally:
        conn.close()
