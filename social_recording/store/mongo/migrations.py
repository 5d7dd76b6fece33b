"""Opening an older Mongo store upgrades it in place: the version lives in `meta`, and every step is
idempotent (an upsert or a conditional update), so several processes may run them at once and a
re-run changes nothing twice.
"""

from __future__ import annotations

import contextlib
from datetime import datetime

from pymongo import UpdateOne
from pymongo.errors import DuplicateKeyError, OperationFailure

from social_recording.domain.models import utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import backfill_url_states, legacy_cause, url_state_fields_from_v2
from social_recording.store.base import SchemaVersionError
from social_recording.store.mongo.counts import CountsMixin
from social_recording.store.mongo.documents import _checked_in, _opt_utc
from social_recording.store.mongo.schema import (
    COUNTS_DOC,
    META,
    NEVER,
    SCHEMA_VERSION,
    STORE_COUNTS,
    TOKEN_URLS,
    TOKENS,
    URL_STATES,
)
from social_recording.store.mongo.tokens import TokensMixin

_V1_ARRAY_INDEXES = ("idx_tokens_social_url_status", "idx_tokens_social_url_url")
"""Indexes of schema version 1 over the embedded `social_urls` array (dropped by the upgrade)."""


class MigrationsMixin(TokensMixin, CountsMixin):
    """The upgrade steps from every earlier schema version to `SCHEMA_VERSION`."""

    def _migrate(self) -> None:
        """Idempotent upgrades; several processes may run them at once (every step is an upsert)."""
        meta = self.db[META].find_one({"_id": "schema"}) or {}
        version = int(meta.get("version", 1))
        if version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"MongoDB database {self.db_name!r} has schema version {version}, newer than this code's "
                f"{SCHEMA_VERSION}: upgrade social_recording before opening it"
            )
        if version < 2:
            self._migrate_embedded_elements()
        if version < 3:
            self._migrate_url_state_fields()
        if version < 4:
            self._build_counts()
        if version < 6:
            self._date_due_times()
        # Version 5 brings the spend ledger: a new collection (its index is made above) and a count
        # on URL states that reads as zero where absent; nothing to rewrite.
        record = ({"_id": "schema"}, {"$max": {"version": SCHEMA_VERSION}})
        try:
            self.db[META].update_one(*record, upsert=True)
        except DuplicateKeyError:  # a concurrent opener inserted it first: raise its version instead
            self.db[META].update_one(*record)

    def _migrate_embedded_elements(self) -> None:
        """Version 1 kept elements in a `social_urls` array inside each token document: move them to
        `token_urls` (insert-if-absent), build the URL states, then drop the arrays."""
        rows: list[tuple[str, str, FetchStatus, datetime | None, int]] = []
        for doc in self.db[TOKENS].find({"social_urls.0": {"$exists": True}}, {"address": 1, "social_urls": 1,
                                                                                  "created_at": 1}):
            for position, el in enumerate(doc.get("social_urls") or []):
                attempted = _opt_utc(el.get("attempted_at"))
                status = el.get("status", FetchStatus.PENDING.value)
                self._insert_element(doc["address"], el["url"], position, doc.get("created_at") or utcnow(),
                                     status=status, attempted_at=attempted, attempts=int(el.get("attempts", 0)),
                                     cause=legacy_cause(status))
                rows.append((doc["address"], el["url"], FetchStatus(status), attempted,
                             int(el.get("attempts", 0))))
        for state in backfill_url_states(rows):
            try:
                self.db[URL_STATES].update_one(
                    {"url": state.url},
                    {"$setOnInsert": {"platform": state.platform, "status": state.status.value,
                                      "attempted_at": state.attempted_at, "attempts": state.attempts,
                                      "source_token": state.source_token, "fence": 0, "request": None,
                                      "updated_at": utcnow()}},
                    upsert=True,
                )
            except DuplicateKeyError:
                continue
        self.db[TOKENS].update_many({"social_urls": {"$exists": True}}, {"$unset": {"social_urls": ""}})
        # Token-lock writes are conditional on `fence <= mine`, which a missing field never matches.
        self.db[TOKENS].update_many({"fence": {"$exists": False}}, {"$set": {"fence": 0}})
        for name in _V1_ARRAY_INDEXES:  # multikey indexes over the arrays just removed
            with contextlib.suppress(OperationFailure):  # already dropped by a concurrent opener
                self.db[TOKENS].drop_index(name)

    def _migrate_url_state_fields(self) -> None:
        """The per-URL state machine's fields on every URL state written before it (one conditional
        update each, so concurrent openers and a re-run change nothing twice)."""
        for doc in list(self.db[URL_STATES].find({"version": {"$exists": False}},
                                                 {"url": 1, "status": 1, "attempted_at": 1, "attempts": 1})):
            answer, answered_at, streak = url_state_fields_from_v2(
                FetchStatus(doc.get("status", FetchStatus.PENDING.value)), _opt_utc(doc.get("attempted_at")),
                int(doc.get("attempts", 0)))
            self.db[URL_STATES].update_one(
                {"_id": doc["_id"], "version": {"$exists": False}},
                {"$set": {"answer": None if answer is None else answer.value, "answered_at": answered_at,
                          "streak": streak, "engine_failures": 0, "version": 1}},
            )

    def _date_due_times(self) -> None:
        """Version 6: every element's `due_at`, dated as the back-off dated it until now (its last
        recording plus the base interval; never recorded: `NEVER`, due at once). Each update is
        conditional on the field being absent, so concurrent openers and a re-run write it once."""
        elements = self.db[TOKEN_URLS]
        batch: list[UpdateOne] = []
        for doc in elements.find({"due_at": {"$exists": False}}, {"_id": 1, "checked_at": 1}):
            checked = _checked_in(doc.get("checked_at"))
            due = NEVER if checked is None else checked + DEFAULT_MIN_INTERVAL
            batch.append(UpdateOne({"_id": doc["_id"], "due_at": {"$exists": False}}, {"$set": {"due_at": due}}))
            if len(batch) >= 1000:
                elements.bulk_write(batch, ordered=False)
                batch = []
        if batch:
            elements.bulk_write(batch, ordered=False)

    def _build_counts(self) -> None:
        """The upgrade that brings the counters: set from a recount (concurrent openers set the same)."""
        counts = {f"n.{key}": n for key, n in self._recount().items()}
        with contextlib.suppress(DuplicateKeyError):  # a concurrent opener made it: it set the same
            self.db[STORE_COUNTS].update_one({"_id": COUNTS_DOC}, {"$set": counts}, upsert=True)
