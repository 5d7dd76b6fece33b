"""The ledger's paid requests tallied as the ledger grows: each evaluation reads only the lines
appended since the one before.

Why: the paid-once check runs at the end of every run and hourly. Re-reading the whole ledger each
time costs time and memory in proportion to every request the sandbox ever answered. The tally
keeps, in a SQLite file beside the ledger, how far the ledger was read (a byte offset, with the
file's identity) and one row per paid subject (`domain.paid.PaidSubject`) with the running totals;
an evaluation folds the new lines in one transaction, in arrival order, and answers from the totals
and the few subjects paid for again (docs/architecture.md, "Health"). A ledger replaced or cut
short, or other counting rules, are tallied again from the start of the file. Two processes
evaluating at once take turns (`BEGIN IMMEDIATE`); the second reads only what the first left.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.paid import PaidLedgerFigures, PaidSubject, RequestKind, counts_as_paid
from social_recording.sandbox.ledger import Ledger
from social_recording.sqlite_file import connect, immediate

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS progress (ledger TEXT PRIMARY KEY, identity TEXT NOT NULL, rules TEXT NOT NULL, "
    "read_to INTEGER NOT NULL, paid_requests INTEGER NOT NULL, retries INTEGER NOT NULL, subjects INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS subjects (service TEXT NOT NULL, subject TEXT NOT NULL, requests INTEGER NOT NULL, "
    "answered_at TEXT, paid_again INTEGER NOT NULL, PRIMARY KEY (service, subject))",
    "CREATE INDEX IF NOT EXISTS idx_subjects_paid_again ON subjects (service, subject) WHERE paid_again > 0",
)
_BUSY_TIMEOUT_S = 60.0
BATCH_SUBJECTS = 250
"""Subjects held in memory between two writes: what one evaluation holds, whatever the ledger's size."""


def tally_path(ledger: Ledger) -> Path:
    return ledger.path.with_name(ledger.path.name + ".paid.db")


class PaidTally:
    """`figures()` of a ledger, kept up to date incrementally in `path` (beside the ledger by default)."""

    def __init__(self, ledger: Ledger, *, second_steps: tuple[str, ...] = (), answer_ttl: timedelta = DEDUPE_TTL,
                 path: str | os.PathLike[str] | None = None) -> None:
        self.ledger = ledger
        self.second_steps = tuple(second_steps)
        self.answer_ttl = answer_ttl
        self.path = Path(path) if path is not None else tally_path(ledger)
        self.lines_read = 0
        """Ledger lines the last `figures()` read (what it did not have to read again)."""

    def __repr__(self) -> str:
        return f"PaidTally({self.ledger!r}, {str(self.path)!r})"

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = connect(self.path, _BUSY_TIMEOUT_S)
        try:
            for stmt in _SCHEMA:
                conn.execute(stmt)
            with immediate(conn):
                yield conn
        finally:
            conn.close()

    def _rules(self) -> str:
        return json.dumps({"second_steps": sorted(self.second_steps), "answer_ttl_s": self.answer_ttl.total_seconds()})

    def figures(self) -> PaidLedgerFigures:
        """Fold the lines appended since the last call, then answer for the whole ledger."""
        key = str(self.ledger.path.resolve())
        self.lines_read = 0
        with self._tx() as conn:
            identity = self.ledger.identity()
            row = conn.execute("SELECT identity, rules, read_to, paid_requests, retries, subjects FROM progress "
                               "WHERE ledger = ?", (key,)).fetchone()
            size = os.stat(self.ledger.path).st_size if identity is not None else 0
            if row is None or row[0] != identity or row[1] != self._rules() or row[2] > size:
                conn.execute("DELETE FROM subjects")
                row = (identity, self._rules(), 0, 0, 0, 0)
            read_to, paid, retries, distinct = int(row[2]), int(row[3]), int(row[4]), int(row[5])
            if identity is not None:
                read_to, paid, retries, distinct = self._fold(conn, read_to, paid, retries, distinct)
            conn.execute("INSERT INTO progress (ledger, identity, rules, read_to, paid_requests, retries, subjects) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ledger) DO UPDATE SET identity = excluded.identity, "
                         "rules = excluded.rules, read_to = excluded.read_to, paid_requests = excluded.paid_requests, "
                         "retries = excluded.retries, subjects = excluded.subjects",
                         (key, identity or "", self._rules(), read_to, paid, retries, distinct))
            repeated = {(str(service), str(subject)): int(n) for service, subject, n in conn.execute(
                "SELECT service, subject, requests FROM subjects WHERE paid_again > 0 ORDER BY service, subject")}
        return PaidLedgerFigures(paid, distinct, retries, repeated)

    def _fold(self, conn: sqlite3.Connection, read_to: int, paid: int, retries: int, distinct: int
              ) -> tuple[int, int, int, int]:
        batch: dict[tuple[str, str], PaidSubject] = {}
        for entry, end in self.ledger.read_from(read_to):
            self.lines_read += 1
            read_to = end
            if not counts_as_paid(entry, self.second_steps):
                continue
            key = (entry.service, entry.subject)
            subject = batch.get(key)
            if subject is None:
                subject = self._load(conn, key)
                distinct += subject.requests == 0
                batch[key] = subject
            paid += 1
            retries += subject.add(entry.ts, entry.status, self.answer_ttl) is RequestKind.RETRY
            if len(batch) >= BATCH_SUBJECTS:
                self._save(conn, batch)
                batch = {}
        self._save(conn, batch)
        return read_to, paid, retries, distinct

    @staticmethod
    def _load(conn: sqlite3.Connection, key: tuple[str, str]) -> PaidSubject:
        row = conn.execute("SELECT requests, answered_at, paid_again FROM subjects WHERE service = ? AND subject = ?",
                           key).fetchone()
        if row is None:
            return PaidSubject()
        return PaidSubject(int(row[0]), datetime.fromisoformat(row[1]) if row[1] else None, int(row[2]))

    @staticmethod
    def _save(conn: sqlite3.Connection, batch: dict[tuple[str, str], PaidSubject]) -> None:
        conn.executemany(
            "INSERT INTO subjects (service, subject, requests, answered_at, paid_again) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (service, subject) DO UPDATE SET requests = excluded.requests, "
            "answered_at = excluded.answered_at, paid_again = excluded.paid_again",
            [(service, subject, s.requests, s.answered_at.isoformat() if s.answered_at else None, s.paid_again)
             for (service, subject), s in batch.items()])
