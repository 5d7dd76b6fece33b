"""Cross-process sandbox state: call counters (`flaky:N`, urlscan polls) and remembered values
(urlscan uuid -> submitted URL).

Why shared and on disk: `flaky:N` means "503 for the first N calls of that target" across every worker
process of a run (and across runs), and a urlscan poll may come from another process than its
submission. A small SQLite file with `BEGIN IMMEDIATE` transactions gives atomic increments without a
server. Without a path the state lives in the process (tests, one-off scripts).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from social_recording.sqlite_file import immediate

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, n INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS memory (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)
_BUSY_TIMEOUT_S = 60.0


class SandboxState:
    """Atomic counters and a small key/value memory, shared by every process using the same path."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._counters: dict[str, int] = {}
        self._memory: dict[str, str] = {}
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._tx() as conn:
                for stmt in _SCHEMA:
                    conn.execute(stmt)

    def __repr__(self) -> str:
        return f"SandboxState({str(self.path) if self.path else None!r})"

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: safe across threads and forked processes alike.
        assert self.path is not None
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        try:
            with immediate(conn):
                yield conn
        finally:
            conn.close()

    def bump(self, key: str) -> int:
        """Increment `key` and return its new value (1 on the first call), atomically across processes."""
        if self.path is None:
            with self._lock:
                self._counters[key] = self._counters.get(key, 0) + 1
                return self._counters[key]
        with self._tx() as conn:
            row = conn.execute(
                "INSERT INTO counters (key, n) VALUES (?, 1) ON CONFLICT(key) DO UPDATE SET n = n + 1 RETURNING n",
                (key,),
            ).fetchone()
        return int(row[0])

    def count(self, key: str) -> int:
        if self.path is None:
            with self._lock:
                return self._counters.get(key, 0)
        with self._tx() as conn:
            row = conn.execute("SELECT n FROM counters WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def reset(self, key: str) -> None:
        if self.path is None:
            with self._lock:
                self._counters.pop(key, None)
            return
        with self._tx() as conn:
            conn.execute("DELETE FROM counters WHERE key = ?", (key,))

    def remember(self, key: str, value: str, *, reset_counter: str | None = None) -> None:
        """Store `value` under `key` (overwriting), optionally resetting a counter in the same transaction."""
        if self.path is None:
            with self._lock:
                self._memory[key] = value
                if reset_counter is not None:
                    self._counters.pop(reset_counter, None)
            return
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO memory (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
            if reset_counter is not None:
                conn.execute("DELETE FROM counters WHERE key = ?", (reset_counter,))

    def recall(self, key: str) -> str | None:
        if self.path is None:
            with self._lock:
                return self._memory.get(key)
        with self._tx() as conn:
            row = conn.execute("SELECT value FROM memory WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None
