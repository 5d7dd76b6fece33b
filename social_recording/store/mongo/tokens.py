"""Tokens (TokenStore): one document per mint address, a `$setOnInsert` upsert behind the unique
address index (a DuplicateKeyError from two concurrent upserts is read as "the other caller inserted
it"), inserted after its elements; the raw values not yet resolved, written under the token's fence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import DuplicateKeyError

from social_recording.domain.models import TokenDoc, TokenProfile, UnresolvedValue, ensure_utc, utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store._codec import platform_or_none, unique_urls
from social_recording.store.base import WriteResult
from social_recording.store.counts import TOKENS_KEY, url_key
from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.documents import _opt_utc, _unresolved, _unresolved_doc, _url
from social_recording.store.mongo.queries import q_existing_addresses, q_token_by_address, q_urls_by_address
from social_recording.store.mongo.schema import NEVER, TOKEN_URLS, TOKENS


class TokensMixin(MongoConnection):
    """Find and create tokens and their elements; resolve or update their raw values."""

    def find_token(self, address: str) -> TokenDoc | None:
        q = q_token_by_address(address)
        doc = self.db[q.collection].find_one(q.filter, q.projection)
        if doc is None:
            return None
        elements = sorted(self._find(q_urls_by_address(address)), key=lambda el: el.get("position", 0))
        return TokenDoc(
            address=doc["address"],
            symbol=doc.get("symbol"),
            image=doc.get("image"),
            first_transfer_at=_opt_utc(doc.get("first_transfer_at")),
            fingerprints=list(doc.get("fingerprints") or []),
            web=doc.get("web"),
            social_urls=[_url(el) for el in elements],
            unresolved=sorted((_unresolved(v) for v in doc.get("unresolved") or []), key=lambda v: v.field),
            created_at=_opt_utc(doc.get("created_at")),
            updated_at=_opt_utc(doc.get("updated_at")),
            fence=int(doc.get("fence", 0)),
        )

    def find_existing_addresses(self, addresses: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(addresses))
        if not wanted:
            return set()
        return {doc["address"] for doc in self._find(q_existing_addresses(wanted))}

    def addresses_with_fingerprint(self, fingerprint: str, limit: int = 100) -> list[str]:
        """The tokens carrying `fingerprint` (by the multikey index on `fingerprints`), in address order."""
        docs = self.db[TOKENS].find({"fingerprints": fingerprint}, {"address": 1, "_id": 0}).sort(
            "address", ASCENDING).limit(limit)
        return [doc["address"] for doc in docs]

    def create_pending_token(self, profile: TokenProfile, now: datetime | None = None) -> bool:
        """Insert-only. The elements go in first (insert-if-absent), then the token document: a crash
        between the two leaves elements without a token, which the next run's create completes, never
        a token that silently lost its URLs."""
        urls = unique_urls(profile.urls, profile.address)
        stamp = ensure_utc(now or utcnow())
        if self.db[TOKENS].find_one({"address": profile.address}, {"_id": 1}) is not None:
            return False
        deltas: Counter[str] = Counter()
        try:
            for position, url in enumerate(urls):
                if self._insert_element(profile.address, url, position, stamp):
                    deltas[url_key(platform_or_none(url), FetchStatus.PENDING.value)] += 1
            return self._insert_token(profile, stamp, deltas)
        finally:
            self._count(deltas)

    def _insert_token(self, profile: TokenProfile, stamp: datetime, deltas: Counter[str]) -> bool:
        on_insert = {
            "symbol": profile.symbol,
            "image": profile.image,
            "first_transfer_at": _opt_utc(profile.first_transfer_at),
            "fingerprints": [],
            "web": None,
            "unresolved": [_unresolved_doc(v) for v in profile.unresolved],
            "created_at": stamp,
            "updated_at": stamp,
            "fence": 0,
        }
        try:
            result = self.db[TOKENS].update_one(
                {"address": profile.address}, {"$setOnInsert": on_insert}, upsert=True
            )
        except DuplicateKeyError:
            return False  # a concurrent upsert inserted it first
        inserted = result.upserted_id is not None
        deltas[TOKENS_KEY] += inserted
        return inserted

    def _insert_element(
        self,
        address: str,
        url: str,
        position: int,
        created_at: datetime,
        *,
        status: str = FetchStatus.PENDING.value,
        attempted_at: datetime | None = None,
        attempts: int = 0,
        cause: Cause | None = None,
    ) -> bool:
        """Insert the element unless it exists; True when this call inserted it."""
        try:
            result = self.db[TOKEN_URLS].update_one(
                {"address": address, "url": url},
                {"$setOnInsert": {
                    "position": position, "platform": platform_or_none(url), "status": status,
                    "attempted_at": attempted_at, "attempts": attempts,
                    "checked_at": attempted_at or NEVER, "cause": None if cause is None else cause.value,
                    "due_at": NEVER if attempted_at is None else attempted_at + DEFAULT_MIN_INTERVAL,
                    "detail": None, "fence": 0,
                    "created_at": ensure_utc(created_at),
                }},
                upsert=True,
            )
        except DuplicateKeyError:  # a concurrent creator inserted it, the same pending element
            return False
        return result.upserted_id is not None

    def _claim_token(self, address: str, fence: int) -> WriteResult | None:
        done = self.db[TOKENS].update_one({"address": address, "fence": {"$lte": fence}}, {"$set": {"fence": fence}})
        if done.matched_count == 1:
            return None
        exists = self.db[TOKENS].find_one({"address": address}, {"_id": 1}) is not None
        return WriteResult.FENCED if exists else WriteResult.NO_ELEMENT

    def _replace_unresolved(
        self, address: str, fence: int, field: str, value: UnresolvedValue | None, now: datetime | None = None
    ) -> None:
        """Replace (or, with None, drop) the raw value of `field`: the token's list is read and written
        back whole, conditional on the fence just claimed. Not `$pull` by a condition, which not every
        Mongo-protocol server implements (docs/architecture.md, "Mongo-protocol servers")."""
        tokens = self.db[TOKENS]
        doc = tokens.find_one({"address": address, "fence": fence}, {"unresolved": 1})
        if doc is None:
            return  # a newer holder claimed the token since: its writes stand
        kept = [raw for raw in doc.get("unresolved") or [] if raw.get("field") != field]
        if value is not None:
            kept.append(_unresolved_doc(value))
        update: dict[str, Any] = {"unresolved": kept}
        if now is not None:
            update["updated_at"] = ensure_utc(now)
        tokens.update_one({"address": address, "fence": fence}, {"$set": update})

    def add_resolved_url(self, address: str, field: str, url: str, fence: int, now: datetime) -> WriteResult:
        refused = self._claim_token(address, fence)
        if refused is not None:
            return refused
        last = self.db[TOKEN_URLS].find_one({"address": address}, {"position": 1}, sort=[("position", DESCENDING)])
        if self._insert_element(address, url, int(last["position"]) + 1 if last else 0, now):
            self._count({url_key(platform_or_none(url), FetchStatus.PENDING.value): 1})
        self._replace_unresolved(address, fence, field, None, now)
        return WriteResult.APPLIED

    def update_unresolved(
        self, address: str, value: UnresolvedValue, fence: int, *, drop: bool = False
    ) -> WriteResult:
        refused = self._claim_token(address, fence)
        if refused is not None:
            return refused
        self._replace_unresolved(address, fence, value.field, None if drop else value)
        return WriteResult.APPLIED
