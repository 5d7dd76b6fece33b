"""The links a URL write stores (`token_links`): they carry the fence and the write that stored them,
and readers see only the newest write's links of a (token, URL), so a holder overtaken mid-write never
shows its links beside the newer holder's, and a replayed write replaces its links instead of
doubling them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bson import ObjectId

from social_recording.domain.graph import PlannedLink
from social_recording.domain.models import TokenLink, ensure_utc
from social_recording.store.counts import LINKS_KEY
from social_recording.store.mongo.graph import GraphMixin
from social_recording.store.mongo.queries import _ref
from social_recording.store.mongo.schema import TOKEN_LINKS, TOKEN_URLS


class LinksMixin(GraphMixin):
    """Write a URL's planned graph (or copy another token's links) and replace its older links."""

    def _write_graph(
        self, address: str, url: str, planned: Sequence[PlannedLink], now: datetime, deltas: Counter[str]
    ) -> list[TokenLink]:
        links: list[TokenLink] = []
        for pl in planned:
            object_id = self._upsert_object(pl.kind, pl.obj, now, deltas)
            if pl.obj.metrics:
                self._record_first_metrics(pl.kind, object_id, pl.obj.metrics, now, deltas)
            links.append(TokenLink.stored(pl, object_id, address, url, now))
        return links

    def _copied_links(self, address: str, url: str, source: str, now: datetime) -> list[TokenLink]:
        """ONE source token's links for `url` (read before anything is replaced)."""
        return [
            link.model_copy(update={"token_address": address, "created_at": now})
            for link in self.find_links(source, url)
        ]

    def _replace_links(
        self, address: str, url: str, links: Sequence[TokenLink], fence: int, deltas: Counter[str]
    ) -> ObjectId:
        """Insert this write's links, then delete every other write's (older fences', and an earlier
        write of this same fence: a replay replaces, never duplicates); if a newer holder claimed the
        element meanwhile, take ours back out (the newer holder's replacement stands). Returns the id
        this write's links carry."""
        coll = self.db[TOKEN_LINKS]
        write_id = ObjectId()  # increasing within a process, and one fence is one holder's
        if links:
            inserted = coll.insert_many([self._link_doc(link, fence, write_id) for link in links], ordered=True)
            deltas[LINKS_KEY] += len(inserted.inserted_ids)
        deltas[LINKS_KEY] -= coll.delete_many({"token_address": address, "entry_url": url,
                                               "$or": [{"fence": {"$lt": fence}}, {"fence": {"$exists": False}},
                                                       {"fence": fence, "write": {"$ne": write_id}}]}).deleted_count
        current = self.db[TOKEN_URLS].find_one({"address": address, "url": url}, {"fence": 1})
        if current is not None and int(current.get("fence", 0)) > fence:
            deltas[LINKS_KEY] -= coll.delete_many(
                {"token_address": address, "entry_url": url, "write": write_id}).deleted_count
        return write_id

    @staticmethod
    def _link_doc(link: TokenLink, fence: int, write_id: ObjectId) -> dict[str, Any]:
        return {
            "token_address": link.token_address,
            "object": link.object.value,
            "object_id": _ref(link.object_id),
            "entry_url": link.entry_url,
            "platform": link.platform,
            "subtype": link.subtype,
            "link_depth": link.link_depth,
            "created_at": ensure_utc(link.created_at),
            "fence": fence,
            "write": write_id,
        }
