"""URL states (one per canonical URL: its last answer, the calls spent on it, an unfinished paid
request or open call) and their fenced writes: a conditional update whose filter carries the fence;
a first insert that loses a race is retried as a plain conditional update (its fence may be the larger
one). The paid calls on record (PaidRequestStore): a submitted two-step request, and a call about to
leave, recorded before it is sent (docs/architecture.md, "No payment without a record").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError, PyMongoError

from social_recording.domain.models import OpenCall, PaidRequest, UrlState, ensure_utc, utcnow
from social_recording.domain.spend import SpendLine, unanswered_lines
from social_recording.domain.status import FetchStatus
from social_recording.store.base import WriteOutcome, WriteResult
from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.documents import _open_call_in, _open_call_out, _state
from social_recording.store.mongo.queries import q_url_state, state_filter
from social_recording.store.mongo.schema import SPEND_LEDGER, URL_STATES
from social_recording.store.write_refusal import NO_STATE, StoredState, state_refusal

log = logging.getLogger("social_recording.store")


class UrlStatesMixin(MongoConnection):
    """Read a URL state, write it under a fence, and say why such a write was refused."""

    def find_url_state(self, url: str) -> UrlState | None:
        q = q_url_state(url)
        doc = self.db[q.collection].find_one(q.filter, q.projection)
        return None if doc is None else _state(doc)

    def _stored_state(self, url: str) -> StoredState:
        doc = self.db[URL_STATES].find_one({"url": url}, {"fence": 1, "version": 1})
        return NO_STATE if doc is None else StoredState(int(doc.get("fence", 0)), int(doc.get("version", 0)))

    def _update_state(self, url: str, fence: int, update: Mapping[str, Any], expect_version: int | None,
                      kept: OpenCall | None, unless: Mapping[str, Any] | None = None) -> bool:
        """Update the URL state if no larger fence was applied to it and (given `expect_version`) it is
        still at that version, inserting it when absent; False when refused. Two holders writing a
        URL's first state race to insert it, and the loser's upsert fails on the unique url whatever
        its fence; it is retried as a plain conditional update. Every caller sets the open call to
        `kept`: the one it replaces, read in the same atomic step, is entered as spent when another
        holder's (`_enter_unanswered`)."""
        flt = {**state_filter(url, fence, expect_version), **(unless or {})}
        coll = self.db[URL_STATES]
        try:
            before = coll.find_one_and_update(flt, update, upsert=True, return_document=ReturnDocument.BEFORE)
        except DuplicateKeyError:
            before = coll.find_one_and_update(flt, update, return_document=ReturnDocument.BEFORE)
            if before is None:
                return False
        if before is not None:
            self._enter_unanswered(url, fence, _open_call_in(before), kept)
        return True

    def _enter_unanswered(self, url: str, fence: int, stored: OpenCall | None, kept: OpenCall | None) -> None:
        """Another holder's open call that a write with `fence` removed goes to the ledger and the
        state's count as spent (domain/spend.py), right after the write, as a spend line does."""
        lines = unanswered_lines(stored, fence, kept)
        if not lines:
            return
        for line in lines:
            self._add_spend(line)
        try:
            self.db[URL_STATES].update_one({"url": url}, {"$inc": {"paid_requests": sum(x.requests for x in lines)}})
        except PyMongoError as exc:
            log.warning("URL state's paid requests not moved (%s: %s); the hourly reconciliation reports it",
                        type(exc).__name__, exc)

    def _add_spend(self, line: SpendLine) -> None:
        """The ledger's `$inc`, right after the URL state that counts the same requests committed.
        Without multi-document transactions a crash between the two leaves them apart: the hourly
        reconciliation reports it. A server gone mid-write fails neither the recorded result nor
        repeats its write for a figure (as the counters)."""
        flt = {"account": line.account, "day": line.day}
        moves = {"$inc": {"requests": line.requests, "cost_usd": line.cost_usd, "unanswered": line.unanswered}}
        coll = self.db[SPEND_LEDGER]
        try:
            try:
                coll.update_one(flt, moves, upsert=True)
            except DuplicateKeyError:  # the day's first upsert lost a race to another writer's
                coll.update_one(flt, moves)
        except PyMongoError as exc:
            log.warning("spend ledger not moved (%s: %s): %s %s +%d; the hourly reconciliation reports it",
                        type(exc).__name__, exc, line.account, line.day, line.requests)

    def _state_refusal(self, url: str, fence: int, expect_version: int | None) -> WriteOutcome:
        """Why a conditional state write matched nothing: a newer holder's fence, or a version moved on
        (also when the state read now admits the write: another holder moved it on in between)."""
        return state_refusal(self._stored_state(url), fence, expect_version) or WriteOutcome(WriteResult.STALE)

    def save_paid_request(self, url: str, platform: str, fence: int, request: PaidRequest,
                          kept: OpenCall | None = None, spend: SpendLine | None = None) -> WriteResult:
        applied = self._update_state(
            url,
            fence,
            {
                "$set": {
                    "fence": fence,
                    "request": {"provider": request.provider, "request_id": request.request_id,
                                "submitted_at": ensure_utc(request.submitted_at)},
                    "open_call": _open_call_out(kept),
                    "updated_at": utcnow(),
                },
                "$inc": {"version": 1, "paid_requests": 0 if spend is None else spend.requests},
                "$setOnInsert": {"platform": platform, "status": FetchStatus.PENDING.value,
                                 "attempted_at": None, "attempts": 0, "source_token": None, "answer": None,
                                 "answered_at": None, "streak": 0, "engine_failures": 0},
            },
            None,
            kept,
            # A repeat of this very save (its acknowledgement lost, write_through_outages repeats it)
            # matches nothing: the state's count moves once, and the ledger's line, never entered by the
            # save that failed, is entered by its repeat.
            unless={"request.request_id": {"$ne": request.request_id}},
        )
        if not applied:
            applied = self._saved_by(url, fence) == request.request_id
        if applied and spend is not None:
            self._add_spend(spend)
        return WriteResult.APPLIED if applied else WriteResult.FENCED

    def _saved_by(self, url: str, fence: int) -> str | None:
        """The id of the paid request the state holds, if the holder with `fence` still holds it."""
        doc = self.db[URL_STATES].find_one({"url": url, "fence": fence}, {"request": 1})
        request = None if doc is None else doc.get("request")
        return None if not request else request.get("request_id")

    def save_open_call(self, url: str, platform: str, fence: int, call: OpenCall) -> WriteResult:
        # Acknowledged by the server before the request leaves (the client's write concern; a replica
        # set's majority in production, see docs/architecture.md, "No payment without a record").
        applied = self._update_state(
            url,
            fence,
            {
                "$set": {"fence": fence, "open_call": _open_call_out(call), "updated_at": utcnow()},
                "$inc": {"version": 1},
                "$setOnInsert": {"platform": platform, "status": FetchStatus.PENDING.value,
                                 "attempted_at": None, "attempts": 0, "source_token": None, "answer": None,
                                 "answered_at": None, "streak": 0, "engine_failures": 0, "request": None},
            },
            None,
            call,
        )
        return WriteResult.APPLIED if applied else WriteResult.FENCED
