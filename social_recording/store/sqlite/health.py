"""The reads of the health checks and the reports: the counters of `store_counts` and their hourly
repair (docs/architecture.md, "Health figures"), the longest-waiting elements, a URL's holders, and
the spend ledger (docs/architecture.md, "Spend budgets").
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any

from social_recording.domain.models import SocialUrl, utcnow
from social_recording.domain.spend import SpendRow
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import dt_to_text
from social_recording.store.base import (
    WAITING_COUNT_BOUND,
    Candidate,
    CandidateQuery,
    SpendTotals,
    StatusCounts,
    WaitingElement,
    WaitingElements,
)
from social_recording.store.counts import CountDrift, StoreCounts, differences
from social_recording.store.sqlite.connection import SqliteBase
from social_recording.store.sqlite.count_triggers import q_recount
from social_recording.store.sqlite.queries import q_holders
from social_recording.store.sqlite.queries_selection import (
    q_count_waiting,
    q_oldest_by_status,
    q_waiting,
)
from social_recording.store.sqlite.rows import (
    _candidate_from_row,
    _fair_order,
    _url_from_row,
    _waiting_from_row,
)
from social_recording.store.waiting import WaitingRange, read_waiting


class HealthMixin(SqliteBase):
    """HealthStore (store/base.py)."""

    def find_holders(self, url: str, limit: int) -> list[tuple[str, SocialUrl]]:
        if limit < 1:
            return []
        return [(row[0], _url_from_row(row)) for row in self._conn().execute(*q_holders(url, limit))]

    def oldest_elements(
        self, statuses: Collection[FetchStatus], limit: int, due_by: datetime | None = None
    ) -> list[Candidate]:
        if limit < 1 or not statuses:
            return []
        cutoff = dt_to_text(due_by or datetime.max.replace(tzinfo=utcnow().tzinfo))
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

    def waiting_elements(
        self, query: CandidateQuery, *, canonical_only: bool = True, count_bound: int = WAITING_COUNT_BOUND
    ) -> WaitingElements:
        with self._read() as conn:
            def count(part: WaitingRange, at_most: int) -> int:
                counted = q_count_waiting(part.status.value, dt_to_text(part.cutoff), at_most, part.recorded,
                                          part.platform, canonical_only)
                return int(conn.execute(*counted).fetchone()[0])

            def listed(part: WaitingRange) -> Iterable[WaitingElement]:
                rows = conn.execute(*q_waiting(part.status.value, dt_to_text(part.cutoff), query.limit, part.recorded,
                                               part.platform, canonical_only)).fetchall()
                return map(_waiting_from_row, rows)

            return read_waiting(query, count_bound, count, listed)

class SpendMixin(SqliteBase):
    """SpendStore (store/base.py)."""

    def spend_rows(self, since_day: str) -> list[SpendRow]:
        rows = self._conn().execute("SELECT account, day, requests, cost_usd, unanswered FROM spend_ledger "
                                    "WHERE day >= ? ORDER BY account, day", [since_day]).fetchall()
        return [SpendRow(str(a), str(d), int(n), float(c), int(u)) for a, d, n, c, u in rows]

    def spend_totals(self) -> SpendTotals:
        with self._read() as conn:
            ledger = conn.execute("SELECT account, SUM(requests) FROM spend_ledger GROUP BY account").fetchall()
            states = conn.execute("SELECT platform, SUM(paid_requests) FROM url_states WHERE paid_requests > 0 "
                                  "GROUP BY platform").fetchall()
        return SpendTotals({str(a): int(n) for a, n in ledger}, {str(p): int(n) for p, n in states})
