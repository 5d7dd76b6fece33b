"""The Mongo store's health and spend reads (HealthStore, SpendStore): the counters' document, its
recount and repair (docs/architecture.md, "Health figures"), the elements waiting longest, and the
spend ledger with what the URL states count (docs/architecture.md, "Spend budgets").
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from pymongo import ASCENDING

from social_recording.domain.models import SocialUrl, ensure_utc
from social_recording.domain.spend import SpendRow
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import OBJECT_COLLECTIONS
from social_recording.store.base import (
    WAITING_COUNT_BOUND,
    Candidate,
    CandidateQuery,
    SpendTotals,
    StatusCounts,
    WaitingElements,
)
from social_recording.store.counts import (
    LINKS_KEY,
    METRICS_KEY,
    TOKENS_KEY,
    CountDrift,
    StoreCounts,
    differences,
    object_key,
    parse_url_key,
    url_key,
)
from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.documents import _candidate, _fair_order, _url, _waiting
from social_recording.store.mongo.queries import (
    MongoQuery,
    q_due_by_status,
    q_holders,
    q_waiting,
)
from social_recording.store.mongo.schema import (
    METRICS,
    SPEND_LEDGER,
    TOKEN_LINKS,
    TOKEN_URLS,
    TOKENS,
    URL_STATES,
)
from social_recording.store.waiting import WaitingRange, read_waiting


class CountsMixin(MongoConnection):
    """Counters, their reconciliation, the waiting elements and the spend figures."""

    def status_counts(self) -> StatusCounts:
        counts = self.counts()
        return StatusCounts(counts.by_platform, counts.tokens)

    def counts(self) -> StoreCounts:
        return StoreCounts.of(self._counter_values().items())

    def _recount(self) -> dict[str, int]:
        """Every counter counted from the documents."""
        out: Counter[str] = Counter()
        for row in self.db[TOKEN_URLS].aggregate(
            [{"$group": {"_id": {"platform": "$platform", "status": "$status"}, "n": {"$sum": 1}}}]
        ):
            out[url_key(row["_id"].get("platform"), str(row["_id"]["status"]))] += int(row["n"])
        for key, (coll, flt) in self._counted().items():
            if key is not None:
                out[key] = int(self.db[coll].count_documents(flt))
        return dict(out)

    @staticmethod
    def _counted(key: str | None = None) -> dict[str | None, tuple[str, dict[str, Any]]]:
        """The collection and filter each counter counts: those of whole collections, or of `key`
        (a URL counter's platform and status)."""
        if key is not None and (parts := parse_url_key(key)) is not None:
            platform, status = parts
            return {key: (TOKEN_URLS, {"platform": platform, "status": status.value})}
        whole: dict[str | None, tuple[str, dict[str, Any]]] = {
            TOKENS_KEY: (TOKENS, {}), METRICS_KEY: (METRICS, {}), LINKS_KEY: (TOKEN_LINKS, {}),
            **{object_key(kind): (coll, {}) for kind, coll in OBJECT_COLLECTIONS.items()},
        }
        return whole if key is None else {key: whole[key]}

    def reconcile_counts(self) -> CountDrift:
        """There is no snapshot across documents here, and writers keep moving the counters while the
        recount runs, so a counter is repaired (by `$inc` of the difference, which keeps moves made
        meanwhile) only when it stood still across the recount and a second count of its documents
        finds the same difference: a write caught between its document and its counter's `$inc`
        settles by itself and is left alone. The rest are reported as unrepaired."""
        started = time.perf_counter()
        before = self._counter_values()
        recounted = self._recount()
        kept = self._counter_values()
        found = differences(kept, recounted)
        unrepaired: set[str] = set()
        for key, (was, counted) in found.items():
            coll, flt = self._counted(key)[key]
            if before.get(key, 0) != was or int(self.db[coll].count_documents(flt)) != counted or (
                    self._counter(key) != was):
                unrepaired.add(key)
                continue
            self._inc({key: counted - was})
        return CountDrift(found, frozenset(unrepaired), time.perf_counter() - started)

    def oldest_elements(
        self, statuses: Collection[FetchStatus], limit: int, due_by: datetime | None = None
    ) -> list[Candidate]:
        if limit < 1 or not statuses:
            return []
        cutoff = ensure_utc(due_by or datetime.max.replace(tzinfo=UTC))
        docs: list[Mapping[str, Any]] = []
        for status in sorted({FetchStatus(s) for s in statuses}):
            q = q_due_by_status(status.value, cutoff, limit)
            flt = {k: v for k, v in q.filter.items() if k != "platform"}  # non-canonical ones included
            docs += list(self._find(MongoQuery(q.collection, flt, q.projection, q.sort, q.limit)))
        return sorted(map(_candidate, docs), key=_fair_order)[:limit]

    def waiting_elements(
        self, query: CandidateQuery, *, canonical_only: bool = True, count_bound: int = WAITING_COUNT_BOUND
    ) -> WaitingElements:
        def find(part: WaitingRange) -> MongoQuery:
            return q_waiting(part.status.value, ensure_utc(part.cutoff), query.limit, part.recorded, part.platform,
                             canonical_only)

        def count(part: WaitingRange, at_most: int) -> int:
            q = find(part)
            return int(self.db[q.collection].count_documents(q.filter, limit=at_most))

        return read_waiting(query, count_bound, count, lambda part: map(_waiting, self._find(find(part))))

    def find_holders(self, url: str, limit: int) -> list[tuple[str, SocialUrl]]:
        if limit < 1:
            return []
        return [(doc["address"], _url(doc)) for doc in self._find(q_holders(url, limit))]

    def spend_rows(self, since_day: str) -> list[SpendRow]:
        docs = self.db[SPEND_LEDGER].find({"day": {"$gte": since_day}}).sort([("account", ASCENDING), ("day", ASCENDING)])
        return [SpendRow(str(d["account"]), str(d["day"]), int(d.get("requests", 0)), float(d.get("cost_usd", 0.0)),
                         int(d.get("unanswered", 0))) for d in docs]

    def spend_totals(self) -> SpendTotals:
        ledger = {str(r["_id"]): int(r["n"]) for r in self.db[SPEND_LEDGER].aggregate(
            [{"$group": {"_id": "$account", "n": {"$sum": "$requests"}}}])}
        states = {str(r["_id"]): int(r["n"]) for r in self.db[URL_STATES].aggregate(
            [{"$match": {"paid_requests": {"$gt": 0}}}, {"$group": {"_id": "$platform", "n": {"$sum": "$paid_requests"}}}])}
        return SpendTotals(ledger, states)
