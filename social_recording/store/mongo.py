"""MongoStore: the production backend (DESIGN §2, seed 004 §1), on pymongo.

Every write is an atomic single-document operation and none replaces a whole document (H-015):
tokens are created with `$setOnInsert` + upsert (insert-only, L-3), one `social_urls` element is
updated in place with the positional operator, objects and metrics are `$setOnInsert` upserts
behind unique indexes (DESIGN §2: the seed lost its unique index, C-3), and a DuplicateKeyError
from two concurrent upserts is read as "the other caller inserted it".

Datetimes: BSON keeps milliseconds, so stored times are truncated to the millisecond; every
datetime read back is tz-aware UTC whatever the client's `tz_aware` setting.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, MongoClient, ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import SocialUrl, TokenDoc, TokenLink, TokenProfile, ensure_utc, utcnow
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import (
    OBJECT_COLLECTIONS,
    checked_metrics,
    object_body,
    status_query,
    unique_urls,
)

TOKENS = "tokens"
TOKEN_LINKS = "token_links"
METRICS = "metrics"

INDEXES: dict[str, list[tuple[str, list[tuple[str, int]], bool]]] = {
    TOKENS: [
        ("uniq_tokens_address", [("address", ASCENDING)], True),
        ("idx_tokens_social_url_status", [("social_urls.status", ASCENDING)], False),
        ("idx_tokens_social_url_url", [("social_urls.url", ASCENDING)], False),
        ("idx_tokens_fingerprints", [("fingerprints", ASCENDING)], False),
        ("idx_tokens_discovered", [("created_at", DESCENDING)], False),
    ],
    TOKEN_LINKS: [
        ("idx_links_token_linked", [("token_address", ASCENDING), ("created_at", ASCENDING)], False),
    ],
    METRICS: [
        (
            "uniq_metrics_object_metric",
            [("object", ASCENDING), ("object_id", ASCENDING), ("metric", ASCENDING)],
            True,
        ),
    ],
    **{
        coll: [(f"uniq_{coll}_platform_key", [("platform_key", ASCENDING)], True)]
        for coll in OBJECT_COLLECTIONS.values()
    },
}
"""(name, keys, unique) per collection: seed 004 §1.4 names, plus the uniques DESIGN §2 adds."""

_INDEX_OPTIONS_CONFLICT = 85
"""Server code for "an index with these keys exists under another name / other options"."""


@dataclass(frozen=True)
class MongoQuery:
    """One hot-path read: the store runs it and `explain()` plans the very same filter."""

    collection: str
    filter: dict[str, Any]
    projection: dict[str, Any] | None = None
    sort: list[tuple[str, int]] | None = None
    limit: int | None = None


def _collection_of(kind: ObjectKind | str) -> str:
    try:
        return OBJECT_COLLECTIONS[ObjectKind(kind).value]
    except ValueError:
        raise ValueError(
            f"unknown object kind {kind!r}; expected one of {sorted(OBJECT_COLLECTIONS)}"
        ) from None


def _ref(object_id: str) -> ObjectId | str:
    """Object references are stored as ObjectId when they are one, so `$lookup` joins work."""
    return ObjectId(object_id) if ObjectId.is_valid(object_id) else object_id


def q_token_by_address(address: str) -> MongoQuery:
    return MongoQuery(TOKENS, {"address": address}, {"_id": 0})


def q_existing_addresses(addresses: Sequence[str]) -> MongoQuery:
    """Seed 004 §1.4: one indexed `$in`, never one query per address."""
    return MongoQuery(TOKENS, {"address": {"$in": list(addresses)}}, {"_id": 0, "address": 1})


def q_tokens_by_url_statuses(
    statuses: Collection[str], addresses: Sequence[str] | None = None, limit: int | None = None
) -> MongoQuery:
    """Seed 004 §1.2: `$in` over statuses is a pure multikey index predicate; `$ne: ok` would not be."""
    flt: dict[str, Any] = {"social_urls.status": {"$in": [str(s) for s in statuses]}}
    if addresses is not None:
        flt["address"] = {"$in": list(addresses)}
    return MongoQuery(TOKENS, flt, {"_id": 0}, [("address", ASCENDING)], limit)


def q_tokens_by_social_urls(urls: Sequence[str]) -> MongoQuery:
    """Seed 002: the gate reads address + social_urls only; elements are picked by the caller."""
    return MongoQuery(
        TOKENS, {"social_urls.url": {"$in": list(urls)}}, {"_id": 0, "address": 1, "social_urls": 1}
    )


def q_object_id_by_platform_key(kind: ObjectKind | str, platform_key: str) -> MongoQuery:
    return MongoQuery(_collection_of(kind), {"platform_key": platform_key}, {"_id": 1})


def q_metrics_of_object(kind: ObjectKind | str, object_id: str) -> MongoQuery:
    return MongoQuery(
        METRICS,
        {"object": ObjectKind(kind).value, "object_id": _ref(object_id)},
        {"_id": 0, "metric": 1, "value": 1},
    )


def q_links_by_token_entry(token_address: str, entry_url: str) -> MongoQuery:
    """Seed 004 §1.5: rides the (token_address, created_at) prefix; no entry_url index needed."""
    return MongoQuery(TOKEN_LINKS, {"token_address": token_address, "entry_url": entry_url}, {"_id": 0})


QUERIES: dict[str, Callable[..., MongoQuery]] = {
    "token_by_address": q_token_by_address,
    "existing_addresses": q_existing_addresses,
    "tokens_by_url_statuses": q_tokens_by_url_statuses,
    "tokens_by_social_urls": q_tokens_by_social_urls,
    "object_id_by_platform_key": q_object_id_by_platform_key,
    "metrics_of_object": q_metrics_of_object,
    "links_by_token_entry": q_links_by_token_entry,
}
"""The hot-path reads by name; `MongoStore.explain(name, *params)` plans exactly these."""


def _plan_stages(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        stage = node.get("stage")
        if isinstance(stage, str):
            yield stage
        for value in node.values():
            yield from _plan_stages(value)
    elif isinstance(node, list):
        for item in node:
            yield from _plan_stages(item)


def _opt_utc(value: datetime | None) -> datetime | None:
    return None if value is None else ensure_utc(value)


class MongoStore:
    """The Store protocol on one MongoDB database.

    `client` is a connection URL (the store then owns and closes its own `MongoClient`) or an
    existing client, e.g. `mongomock.MongoClient(tz_aware=True)` in tests (left open on close()
    unless `owns_client=True`).
    """

    def __init__(self, client: str | Any, db_name: str, *, owns_client: bool | None = None) -> None:
        if not db_name:
            raise ValueError("MongoStore needs a database name")
        if isinstance(client, str):
            self._client: Any = MongoClient(client, tz_aware=True)
        else:
            self._client = client
        self._owns_client = isinstance(client, str) if owns_client is None else owns_client
        self.db_name = db_name
        self.db: Any = self._client[db_name]
        try:
            self._ensure_indexes()
        except BaseException:
            self.close()  # do not leak the connection pool of a store that never opened
            raise

    def _ensure_indexes(self) -> None:
        for coll, indexes in INDEXES.items():
            for name, keys, unique in indexes:
                try:
                    self.db[coll].create_index(keys, name=name, unique=unique)
                except OperationFailure as exc:
                    if exc.code != _INDEX_OPTIONS_CONFLICT or not self._has_equivalent(coll, keys, unique):
                        raise
                    # The same index exists under another name (made by hand or an older
                    # deployment): it serves the queries and the uniqueness equally well.

    def _has_equivalent(self, coll: str, keys: list[tuple[str, int]], unique: bool) -> bool:
        for info in self.db[coll].index_information().values():
            same_keys = [(k, int(d)) for k, d in info["key"]] == keys
            if same_keys and bool(info.get("unique", False)) == unique:
                return True
        return False

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _find(self, q: MongoQuery) -> Any:
        cursor = self.db[q.collection].find(q.filter, q.projection)
        if q.sort:
            cursor = cursor.sort(q.sort)
        if q.limit is not None:
            cursor = cursor.limit(q.limit)
        return cursor

    def explain(self, query_name: str, *params: Any) -> list[str]:
        """Stage names of the winning plan of the named hot-path read (needs a real server)."""
        try:
            build = QUERIES[query_name]
        except KeyError:
            raise ValueError(f"unknown query {query_name!r}; expected one of {sorted(QUERIES)}") from None
        plan = self._find(build(*params)).explain()
        return list(_plan_stages(plan.get("queryPlanner", {}).get("winningPlan", {})))

    # ----------------------------------------------------------------- tokens

    @staticmethod
    def _url(el: Mapping[str, Any]) -> SocialUrl:
        return SocialUrl(
            url=el["url"],
            status=FetchStatus(el["status"]),
            attempted_at=_opt_utc(el.get("attempted_at")),
            attempts=int(el.get("attempts", 0)),
        )

    def _token(self, doc: Mapping[str, Any]) -> TokenDoc:
        return TokenDoc(
            address=doc["address"],
            symbol=doc.get("symbol"),
            image=doc.get("image"),
            first_transfer_at=_opt_utc(doc.get("first_transfer_at")),
            fingerprints=list(doc.get("fingerprints") or []),
            web=doc.get("web"),
            social_urls=[self._url(el) for el in doc.get("social_urls") or []],
            created_at=_opt_utc(doc.get("created_at")),
            updated_at=_opt_utc(doc.get("updated_at")),
        )

    def find_token(self, address: str) -> TokenDoc | None:
        q = q_token_by_address(address)
        doc = self.db[q.collection].find_one(q.filter, q.projection)
        return None if doc is None else self._token(doc)

    def find_existing_addresses(self, addresses: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(addresses))
        if not wanted:
            return set()
        return {doc["address"] for doc in self._find(q_existing_addresses(wanted))}

    def create_pending_token(self, profile: TokenProfile, now: datetime | None = None) -> bool:
        """L-3: `$setOnInsert` upsert, never a `$set`: an existing token is left exactly as it is."""
        urls = unique_urls(profile.urls, profile.address)
        stamp = ensure_utc(now or utcnow())
        on_insert = {
            "symbol": profile.symbol,
            "image": profile.image,
            "first_transfer_at": _opt_utc(profile.first_transfer_at),
            "fingerprints": [],
            "web": None,
            "social_urls": [
                {"url": url, "status": FetchStatus.PENDING.value, "attempted_at": None, "attempts": 0}
                for url in urls
            ],
            "created_at": stamp,
            "updated_at": stamp,
        }
        try:
            result = self.db[TOKENS].update_one(
                {"address": profile.address}, {"$setOnInsert": on_insert}, upsert=True
            )
        except DuplicateKeyError:
            return False  # a concurrent upsert inserted it first
        return result.upserted_id is not None

    def record_url_result(
        self, address: str, url: str, status: FetchStatus, attempted_at: datetime | None
    ) -> bool:
        """H-015 / seed 004 §6.2: one element, in place. The filter names the element, so the
        positional `$` addresses exactly it (a token never holds a url twice, DESIGN §2) — the same
        effect as the seed's arrayFilters form, which mongomock cannot run."""
        status = FetchStatus(status)
        update: dict[str, Any] = {"$set": {"social_urls.$.status": status.value, "updated_at": utcnow()}}
        if attempted_at is not None:
            update["$set"]["social_urls.$.attempted_at"] = ensure_utc(attempted_at)
            update["$inc"] = {"social_urls.$.attempts": 1}
        result = self.db[TOKENS].update_one({"address": address, "social_urls.url": url}, update)
        return bool(result.matched_count == 1)

    def find_tokens_by_url_statuses(
        self,
        statuses: Collection[FetchStatus],
        addresses: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[TokenDoc]:
        query = status_query(statuses, addresses, limit)
        if query is None:
            return []
        wanted, among = query
        return [self._token(doc) for doc in self._find(q_tokens_by_url_statuses(wanted, among, limit))]

    def find_tokens_by_social_urls(self, urls: Sequence[str]) -> list[TokenDoc]:
        wanted = list(dict.fromkeys(urls))
        if not wanted:
            return []
        docs = sorted(self._find(q_tokens_by_social_urls(wanted)), key=lambda d: d["address"])
        return [
            TokenDoc(address=d["address"], social_urls=[self._url(el) for el in d.get("social_urls") or []])
            for d in docs
        ]

    # ----------------------------------------------------------------- objects and metrics

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """R-009 / DESIGN §2: `$setOnInsert` upsert on the unique platform_key; never overwrites."""
        coll = self.db[_collection_of(kind)]
        on_insert = {
            "platform": obj.platform.value,
            "subtype": obj.subtype,
            **object_body(obj),
            "created_at": ensure_utc(now or utcnow()),
        }
        q = q_object_id_by_platform_key(kind, obj.platform_key)
        for _ in range(3):
            try:
                doc = coll.find_one_and_update(
                    q.filter,
                    {"$setOnInsert": on_insert},
                    projection=q.projection,
                    upsert=True,
                    return_document=ReturnDocument.AFTER,
                )
            except DuplicateKeyError:
                doc = coll.find_one(q.filter, q.projection)  # the concurrent upsert won: read its row
            if doc is not None:
                return str(doc["_id"])
        raise RuntimeError(f"upsert of {kind} {obj.platform_key!r} returned no row three times")

    def get_object(self, kind: ObjectKind, object_id: str) -> dict[str, Any] | None:
        if not ObjectId.is_valid(object_id):
            return None
        doc = self.db[_collection_of(kind)].find_one({"_id": ObjectId(object_id)})
        if doc is None:
            return None
        out = {k: v for k, v in doc.items() if k != "_id"}
        out["id"] = str(doc["_id"])
        if isinstance(out.get("created_at"), datetime):
            out["created_at"] = ensure_utc(out["created_at"])
        return out

    def count_objects(self, kind: ObjectKind) -> int:
        return int(self.db[_collection_of(kind)].count_documents({}))

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        """First point only per (object, metric): `$setOnInsert` upserts; a duplicate-key race
        means another writer recorded the first point, which is exactly what we want kept."""
        values = checked_metrics(metrics, object_id)
        if not values:
            return
        kind_value = ObjectKind(kind).value
        ref = _ref(object_id)
        stamp = ensure_utc(observed_at)
        metrics_coll = self.db[METRICS]
        for name, value in values.items():
            try:
                metrics_coll.update_one(
                    {"object": kind_value, "object_id": ref, "metric": name},
                    {"$setOnInsert": {"value": value, "observed_at": stamp}},
                    upsert=True,
                )
            except DuplicateKeyError:
                continue  # a concurrent writer recorded the first point: keep it

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]:
        return {
            doc["metric"]: float(doc["value"]) for doc in self._find(q_metrics_of_object(kind, object_id))
        }

    # ----------------------------------------------------------------- token_links

    def delete_links(self, token_address: str, entry_url: str) -> int:
        q = q_links_by_token_entry(token_address, entry_url)
        return int(self.db[TOKEN_LINKS].delete_many(q.filter).deleted_count)

    def append_links(self, links: Sequence[TokenLink]) -> None:
        if not links:
            return
        self.db[TOKEN_LINKS].insert_many(
            [
                {
                    "token_address": link.token_address,
                    "object": link.object.value,
                    "object_id": _ref(link.object_id),
                    "entry_url": link.entry_url,
                    "platform": link.platform,
                    "subtype": link.subtype,
                    "link_depth": link.link_depth,
                    "created_at": ensure_utc(link.created_at),
                }
                for link in links
            ],
            ordered=True,
        )

    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
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
            for d in self._find(q_links_by_token_entry(token_address, entry_url))
        ]
        links.sort(key=lambda link: (link.link_depth, link.object.value, link.object_id))
        return links

    def __repr__(self) -> str:
        return f"MongoStore(db={self.db_name!r})"
