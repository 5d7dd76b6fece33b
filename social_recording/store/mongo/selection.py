"""Which elements and raw values are due (SelectionStore): candidates in the fair order (oldest first,
never-recorded first, ties by address and URL), read along the retry indexes so the limit stops the
scan early (docs/architecture.md, "Retry selection").
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from social_recording.domain.models import UnresolvedValue, ensure_utc
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store._codec import held_back_counts, waiting_parts
from social_recording.store.base import Candidate, CandidateQuery
from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.documents import (
    _candidate,
    _checked_out,
    _fair_order,
    _opt_utc,
    _unresolved,
)
from social_recording.store.mongo.queries import (
    q_due_among_addresses,
    q_due_by_status,
    q_due_by_status_platform,
    q_unresolved_due,
)
from social_recording.store.mongo.schema import TOKEN_URLS


class SelectionMixin(MongoConnection):
    """Select the due elements and raw values; count those held back."""

    def select_candidates(self, query: CandidateQuery) -> list[Candidate]:
        cutoff = ensure_utc(query.due_by)
        docs: list[Mapping[str, Any]] = []
        if query.addresses is not None:
            statuses = sorted(s.value for s in query.statuses)
            found = self._find(q_due_among_addresses(statuses, list(dict.fromkeys(query.addresses)), cutoff))
            for doc in found:
                if doc["status"] == FetchStatus.UNSUPPORTED.value and query.unsupported_platforms is not None and (
                    doc.get("platform") not in query.unsupported_platforms
                    or doc.get("cause") != Cause.NO_GENERATOR.value
                ):
                    continue
                docs.append(doc)
        else:
            for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
                docs += list(self._find(q_due_by_status(status.value, cutoff, query.limit) if platform is None
                                        else q_due_by_status_platform(status.value, platform, cutoff, query.limit)))
        return sorted(map(_candidate, docs), key=_fair_order)[: query.limit]

    def count_held_back(self, query: CandidateQuery, bound: int) -> int:
        if bound < 1:
            return 0
        after = ensure_utc(query.due_by)
        if query.addresses is not None:
            found = self.db[TOKEN_URLS].find(
                {"address": {"$in": list(dict.fromkeys(query.addresses))},
                 "status": {"$in": sorted(s.value for s in query.statuses)},
                 "due_at": {"$gt": after}, "platform": {"$ne": None}},
                {"status": 1, "platform": 1, "cause": 1},
            )
            count = sum(held_back_counts(query, FetchStatus(d["status"]), d.get("platform"), d.get("cause"))
                        for d in found)
            return min(count, bound)
        count = 0
        for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
            if count >= bound:
                break
            flt: dict[str, Any] = {"status": status.value, "due_at": {"$gt": after}}
            if platform is not None:
                flt.update(platform=platform, cause=Cause.NO_GENERATOR.value)
            count += int(self.db[TOKEN_URLS].count_documents(flt, limit=bound - count))
        return min(count, bound)

    def select_unresolved(self, checked_before: datetime, limit: int) -> list[tuple[str, UnresolvedValue]]:
        """Every token holding a due raw value is read (an indexed filter) and the values are ordered
        here, keeping the `limit` oldest: servers disagree on how a token sorts by an array field and
        on what `$unwind` keeps (docs/architecture.md, "Mongo-protocol servers"). Raw values are few:
        each is dropped after its last attempt."""
        if limit < 1:
            return []
        cutoff = ensure_utc(checked_before)
        due = (
            (doc["address"], _unresolved(raw))
            for doc in self._find(q_unresolved_due(cutoff))
            for raw in doc.get("unresolved") or []
            if _checked_out(_opt_utc(raw.get("checked_at"))) <= cutoff
        )
        return heapq.nsmallest(limit, due, key=lambda pair: (_checked_out(pair[1].checked_at), pair[0],
                                                              pair[1].field))
