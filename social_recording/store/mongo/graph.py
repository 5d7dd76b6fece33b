"""Objects, metrics and links (GraphStore): objects and first metrics are `$setOnInsert` upserts
behind unique indexes, so they never overwrite (a DuplicateKeyError from two concurrent upserts is
read as "the other caller inserted it"); of a (token, URL)'s links only the newest write's are read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ReturnDocument
from pymongo.errors import DuplicateKeyError

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenLink, ensure_utc, utcnow
from social_recording.store._codec import checked_metrics, object_body, object_collection, stored_body
from social_recording.store.counts import LINKS_KEY, METRICS_KEY, object_key
from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.documents import _write_key
from social_recording.store.mongo.queries import (
    _ref,
    q_links_by_token_entry,
    q_metrics_of_object,
    q_object_id_by_platform_key,
)
from social_recording.store.mongo.schema import METRICS


class GraphMixin(MongoConnection):
    """Upsert and read objects, their first metrics and the tokens' links."""

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """`$setOnInsert` upsert on the unique platform_key; never overwrites."""
        deltas: Counter[str] = Counter()
        try:
            return self._upsert_object(kind, obj, now, deltas)
        finally:
            self._count(deltas)

    def _upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None, deltas: Counter[str]) -> str:
        coll = self.db[object_collection(kind)]
        on_insert = {
            "platform": obj.platform.value,
            "subtype": obj.subtype,
            **object_body(obj),
            "created_at": ensure_utc(now or utcnow()),
        }
        q = q_object_id_by_platform_key(kind, obj.platform_key)
        for _ in range(3):
            try:
                # The row as it was: None when nothing matched, i.e. this call inserted it (counted),
                # and its id is read next; an existing row answers in one round trip.
                doc = coll.find_one_and_update(
                    q.filter,
                    {"$setOnInsert": on_insert},
                    upsert=True,
                    return_document=ReturnDocument.BEFORE,
                )
                if doc is None:
                    deltas[object_key(kind)] += 1
                    doc = coll.find_one(q.filter, q.projection)
            except DuplicateKeyError:
                doc = coll.find_one(q.filter, q.projection)  # the concurrent upsert won: read its row
            if doc is not None:
                return str(doc["_id"])
        raise RuntimeError(f"upsert of {kind} {obj.platform_key!r} returned no row three times")

    def get_object(self, kind: ObjectKind, object_id: str) -> dict[str, Any] | None:
        if not ObjectId.is_valid(object_id):
            return None
        doc = self.db[object_collection(kind)].find_one({"_id": ObjectId(object_id)})
        if doc is None:
            return None
        out = {k: v for k, v in doc.items() if k != "_id"}
        out.update(stored_body(doc))
        out["id"] = str(doc["_id"])
        if isinstance(out.get("created_at"), datetime):
            out["created_at"] = ensure_utc(out["created_at"])
        return out

    def count_objects(self, kind: ObjectKind) -> int:
        return self._counter(object_key(kind))

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        """First point only per (object, metric): `$setOnInsert` upserts; a duplicate-key race
        means another writer recorded the first point, which is exactly what we want kept."""
        deltas: Counter[str] = Counter()
        try:
            self._record_first_metrics(kind, object_id, metrics, observed_at, deltas)
        finally:
            self._count(deltas)

    def _record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime,
        deltas: Counter[str],
    ) -> None:
        values = checked_metrics(metrics, object_id)
        if not values:
            return
        kind_value = ObjectKind(kind).value
        ref = _ref(object_id)
        stamp = ensure_utc(observed_at)
        metrics_coll = self.db[METRICS]
        for name, value in values.items():
            try:
                result = metrics_coll.update_one(
                    {"object": kind_value, "object_id": ref, "metric": name},
                    {"$setOnInsert": {"value": value, "observed_at": stamp}},
                    upsert=True,
                )
            except DuplicateKeyError:
                continue  # a concurrent writer recorded the first point: keep it
            deltas[METRICS_KEY] += result.upserted_id is not None

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]:
        return {
            doc["metric"]: float(doc["value"]) for doc in self._find(q_metrics_of_object(kind, object_id))
        }

    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
        """Only the newest fence's links of this (token, URL): an overtaken writer's leftovers are
        never shown beside the current ones (they are deleted by the next replacement)."""
        q = q_links_by_token_entry(token_address, entry_url)
        docs = list(self.db[q.collection].find(q.filter, q.projection))
        newest = max((_write_key(d) for d in docs), default=(0, ""))
        links = [
            TokenLink(
                token_address=d["token_address"],
                object=ObjectKind(d["object"]),
                object_id=str(d["object_id"]),
                entry_url=d["entry_url"],
                platform=d["platform"],
                subtype=d["subtype"],
                link_depth=int(d["link_depth"]),
                created_at=ensure_utc(d["created_at"]),
            )
            for d in docs
            if _write_key(d) == newest
        ]
        links.sort(key=lambda link: (link.link_depth, link.object.value, link.object_id))
        return links

    def count_links(self) -> int:
        return self._counter(LINKS_KEY)

    def count_metrics(self) -> int:
        return self._counter(METRICS_KEY)
