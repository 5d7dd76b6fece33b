"""One recording of a URL (UrlWriteStore), applied without multi-document transactions in an order
that a crash or a newer holder can interrupt without leaving a wrong answer behind: refuse a stale
holder before it touches anything (a read of the element's and the URL state's fences), claim the
element's fence, upsert objects and first metrics (idempotent), insert this write's links then delete
the older ones, update the URL state, then the element (conditional on still holding the claimed
fence). docs/architecture.md, "Fencing".
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from bson import ObjectId
from pymongo import ReturnDocument

from social_recording.domain.models import SocialUrl, TokenLink, ensure_utc
from social_recording.store.base import UrlWrite, WriteOutcome, WriteResult
from social_recording.store.counts import LINKS_KEY, url_key
from social_recording.store.mongo.documents import _answered_at_out, _open_call_out, _opt_utc, _url
from social_recording.store.mongo.links import LinksMixin
from social_recording.store.mongo.queries import element_filter, q_element, state_filter
from social_recording.store.mongo.schema import TOKEN_LINKS, TOKEN_URLS, TOKENS, URL_STATES
from social_recording.store.mongo.url_states import UrlStatesMixin
from social_recording.store.write_refusal import KEPT_STATUS, StoredElement, url_write_refusal

log = logging.getLogger("social_recording.store")


class UrlWriteMixin(LinksMixin, UrlStatesMixin):
    """Apply a URL write: links, URL state and element, each under the write's fence."""

    def find_element(self, address: str, url: str) -> SocialUrl | None:
        q = q_element(address, url)
        doc = self.db[q.collection].find_one(q.filter, q.projection)
        return None if doc is None else _url(doc)

    def _refusal(self, address: str, url: str, fence: int, expect_version: int | None = None) -> WriteOutcome | None:
        """Why a write with `fence` (made on the state's `expect_version`) may not touch (address, url),
        or None when it may (a read: the conditional writes that follow still decide when another
        holder races this one)."""
        doc = self.db[TOKEN_URLS].find_one({"address": address, "url": url}, {"status": 1, "fence": 1})
        element = None if doc is None else StoredElement(str(doc.get("status")), int(doc.get("fence", 0)))
        return url_write_refusal(element, self._stored_state(url), fence, expect_version)

    def _refused(self, address: str, url: str, fence: int, expect_version: int | None = None) -> WriteOutcome:
        """The refusal of a conditional write that matched nothing."""
        refusal = self._refusal(address, url, fence, expect_version)
        if refusal is not None:
            return refusal
        # Nothing refuses `fence` any more, yet the write matched nothing: a larger fence came and went
        # between the two reads; report the element's.
        doc = self.db[TOKEN_URLS].find_one({"address": address, "url": url}, {"fence": 1}) or {}
        return WriteOutcome(WriteResult.FENCED, applied_fence=int(doc.get("fence", 0)))

    def apply_url_write(self, write: UrlWrite) -> WriteOutcome:
        f = write.fence
        elements = self.db[TOKEN_URLS]
        # A stale holder is refused before it changes anything, the element's fence included.
        refusal = self._refusal(write.address, write.url, f, write.expect_version)
        if refusal is not None:
            return refusal
        claimed = elements.update_one(element_filter(write.address, write.url, f), {"$set": {"fence": f}})
        if claimed.matched_count != 1:
            return self._refused(write.address, write.url, f)
        deltas: Counter[str] = Counter()
        try:
            return self._apply_claimed(write, deltas)
        finally:
            self._count(deltas)  # what was written, even when a later step was refused or failed

    def _apply_claimed(self, write: UrlWrite, deltas: Counter[str]) -> WriteOutcome:
        """`apply_url_write` once the element's fence is claimed; `deltas` collects the counters' moves."""
        f = write.fence
        key = {"address": write.address, "url": write.url}
        links: tuple[TokenLink, ...] = ()
        write_id: ObjectId | None = None
        if write.graph_links is not None:
            links = tuple(self._write_graph(write.address, write.url, write.graph_links, write.now, deltas))
        elif write.copy_links_from is not None:
            links = tuple(self._copied_links(write.address, write.url, write.copy_links_from, write.now))
        if write.graph_links is not None or write.copy_links_from is not None:
            write_id = self._replace_links(write.address, write.url, links, f, deltas)
        # The URL state is the commit point: written only at the version the decision read. An
        # element-only write moves the version on too (or, with no state, checks there is still none).
        if write.state is not None:
            s = write.state
            req = s.request
            fields: dict[str, Any] = {
                "platform": write.platform, "status": s.status.value, "attempted_at": _opt_utc(s.attempted_at),
                "attempts": s.attempts, "fence": f, "updated_at": ensure_utc(write.now),
                "source_token": s.source_token, "answer": None if s.answer is None else s.answer.value,
                **_answered_at_out(s.answered_at), "streak": s.streak, "engine_failures": s.engine_failures,
                "request": None if req is None else {"provider": req.provider, "request_id": req.request_id,
                                                     "submitted_at": ensure_utc(req.submitted_at)},
                "open_call": _open_call_out(s.open_call),
            }
            moves = {"version": 1, **({"paid_requests": write.spend.requests} if write.spend else {})}
            committed = self._update_state(write.url, f, {"$set": fields, "$inc": moves}, write.expect_version,
                                           s.open_call)
            if committed and write.spend is not None:
                self._add_spend(write.spend)
        elif write.expect_version:
            committed = self.db[URL_STATES].update_one(
                state_filter(write.url, f, write.expect_version), {"$set": {"fence": f}, "$inc": {"version": 1}},
            ).matched_count == 1
        elif write.expect_version == 0:
            committed = self.db[URL_STATES].find_one({"url": write.url}, {"_id": 1}) is None
        else:
            self.db[URL_STATES].update_one({"url": write.url, "fence": {"$lt": f}}, {"$set": {"fence": f}})
            committed = True
        if not committed:
            # A newer holder wrote the URL's state meanwhile, or a late one moved it on: take this
            # write's links back out; the caller reads the state again (STALE) or stops (FENCED).
            if write_id is not None:
                deltas[LINKS_KEY] -= self.db[TOKEN_LINKS].delete_many(
                    {"token_address": write.address, "entry_url": write.url, "write": write_id}
                ).deleted_count
            return self._state_refusal(write.url, f, write.expect_version)
        e = write.element
        # The element as it was before this update (findAndModify, without a projection: not every
        # Mongo-protocol server takes one): its status is the counter this write moves away from.
        before = self.db[TOKEN_URLS].find_one_and_update(
            {**key, "fence": f, "status": {"$ne": KEPT_STATUS.value}},
            {"$set": {
                "status": e.status.value, "attempts": e.attempts, "attempted_at": _opt_utc(e.attempted_at),
                "checked_at": ensure_utc(e.checked_at), "cause": None if e.cause is None else e.cause.value,
                "detail": e.detail, "due_at": ensure_utc(e.next_due),
            }},
            return_document=ReturnDocument.BEFORE,
        )
        if before is None:
            return self._refused(write.address, write.url, f)
        if before.get("status") != e.status.value:
            deltas[url_key(before.get("platform"), str(before.get("status")))] -= 1
            deltas[url_key(before.get("platform"), e.status.value)] += 1
        self.db[TOKENS].update_one({"address": write.address}, {"$set": {"updated_at": ensure_utc(write.now)}})
        return WriteOutcome(WriteResult.APPLIED, links=links)
