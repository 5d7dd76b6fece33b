"""What the runs record next: the retry selection (due elements in the fair order, by index ranges that
stop at the limit), the count of those still held back, and the unresolved values due.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from social_recording.domain.models import UnresolvedValue
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store._codec import dt_to_text, held_back_counts, waiting_parts
from social_recording.store.base import Candidate, CandidateQuery
from social_recording.store.sqlite.connection import SqliteBase
from social_recording.store.sqlite.queries import q_unresolved_due
from social_recording.store.sqlite.queries_selection import (
    q_count_held_back,
    q_count_held_back_among,
    q_due_among_addresses,
    q_due_by_status,
    q_due_by_status_platform,
)
from social_recording.store.sqlite.rows import _candidate_from_row, _checked_dt, _fair_order
from social_recording.store.sqlite.sql import _chunks, _dedup


class SelectionMixin(SqliteBase):
    """SelectionStore (store/base.py)."""

    def select_candidates(self, query: CandidateQuery) -> list[Candidate]:
        cutoff = dt_to_text(query.due_by)
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
                for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
                    sql = (q_due_by_status(status.value, cutoff, query.limit) if platform is None
                           else q_due_by_status_platform(status.value, platform, cutoff, query.limit))
                    rows += conn.execute(*sql).fetchall()
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
        after = dt_to_text(query.due_by)
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

    def select_unresolved(self, checked_before: datetime, limit: int) -> list[tuple[str, UnresolvedValue]]:
        if limit < 1:  # (SQLite reads a negative LIMIT as "no limit")
            return []
        rows = self._conn().execute(*q_unresolved_due(dt_to_text(checked_before), limit)).fetchall()
        return [
            (a, UnresolvedValue(field=f, value=v, reason=r, attempts=n, checked_at=_checked_dt(c)))
            for a, f, v, r, n, c in rows
        ]
