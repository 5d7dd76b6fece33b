"""MongoStore: the production backend, on pymongo.

Collections: `tokens` (one document per mint address), `token_urls` (one document per element of a
token's `social_urls`, keyed by (address, url)), `url_states` (one per canonical URL: its last answer,
the calls spent on it, an unfinished paid request), `token_links`, `metrics` and the three object
collections. Elements live in their own collection, not in an array inside the token, so that the
retry selection (status, oldest `checked_at` first, limited) and the fenced element write are
single-index, single-document operations; an array element cannot be sorted on or bounded by a
multikey index.

Every write is an atomic single-document operation; none replaces a whole document. Tokens, objects
and metrics are `$setOnInsert` upserts behind unique indexes (a DuplicateKeyError from two concurrent
upserts is read as "the other caller inserted it"). Fenced writes are conditional updates whose
filter carries the fence (`fence <= mine`), never read-then-write; a URL state's first insert that
loses such a race is retried as a plain conditional update (its fence may be the larger one).

Without multi-document transactions, one recording is applied in an order that a crash or a newer
holder can interrupt without leaving a wrong answer behind: refuse a stale holder before it touches
anything (a read of the element's and the URL state's fences), claim the element's fence, upsert objects
and first metrics (idempotent), insert this write's links then delete the older ones, update the URL
state, then the element (conditional on still holding the claimed fence). Links carry the fence and
the write that stored them, and readers see only the newest write's links of a (token, URL), so a
holder overtaken mid-write never shows its links beside the newer holder's, and a replayed write
replaces its links instead of doubling them.

The health figures are counters in one `store_counts` document, moved with one `$inc` right after
each write by what that write reports it did (an upsert's insert, a delete's count, the element's
status before its update): docs/architecture.md, "Health figures".

Datetimes: BSON keeps milliseconds, so stored times are truncated to the millisecond; every
datetime read back (nested ones too) is tz-aware UTC whatever the client's `tz_aware` setting. The
schema version lives in `meta`; opening an older database upgrades it in place (idempotent steps).

The store depends only on what MongoDB and FerretDB (the server the tests run it on) share, and
checks rather than assumes its indexes: docs/architecture.md, "Mongo-protocol servers".
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, MongoClient, ReturnDocument
from pymongo.errors import DuplicateKeyError, OperationFailure, PyMongoError

from social_recording.domain.graph import ObjectKind, PlannedLink, SocialObject
from social_recording.domain.models import (
    OpenCall,
    PaidRequest,
    SocialUrl,
    TokenDoc,
    TokenLink,
    TokenProfile,
    UnresolvedValue,
    UrlState,
    ensure_utc,
    utcnow,
)
from social_recording.domain.spend import SpendLine, SpendRow
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store._codec import (
    OBJECT_COLLECTIONS,
    backfill_url_states,
    checked_metrics,
    held_back_counts,
    legacy_cause,
    object_body,
    platform_or_none,
    stored_body,
    unique_urls,
    url_state_fields_from_v2,
    waiting_parts,
)
from social_recording.store.base import (
    WAITING_COUNT_BOUND,
    Candidate,
    CandidateQuery,
    SchemaVersionError,
    SpendTotals,
    StatusCounts,
    UrlWrite,
    WaitingElement,
    WaitingElements,
    WriteOutcome,
    WriteResult,
    longest_waiting,
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
from social_recording.store.write_refusal import (
    KEPT_STATUS,
    NO_STATE,
    StoredElement,
    StoredState,
    state_refusal,
    url_write_refusal,
)

TOKENS = "tokens"
TOKEN_URLS = "token_urls"
URL_STATES = "url_states"
TOKEN_LINKS = "token_links"
METRICS = "metrics"
META = "meta"
STORE_COUNTS = "store_counts"
SPEND_LEDGER = "spend_ledger"
"""One document per (billing account, UTC day): paid requests and their estimated cost, moved with
`$inc` right after the URL state that counts the same requests (docs/architecture.md, "Spend budgets")."""
COUNTS_DOC = "counts"
"""The counters (`store/counts.py`) are the fields of ONE document in `store_counts`, under `n`: a
write moves all of its counters in one atomic update (an element's status change takes one from a
counter and gives it to another at once) and a read is one document."""

SCHEMA_VERSION = 5

log = logging.getLogger("social_recording.store")

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
"""`checked_at` of an element never recorded: sorts before every real time, so one index range
(`checked_at <= cutoff`) selects never-recorded and due elements alike, oldest first."""

_FAIR_SORT: list[tuple[str, int]] = [("checked_at", ASCENDING), ("address", ASCENDING), ("url", ASCENDING)]
"""Oldest first, never-recorded (`NEVER`) first, ties by address and URL: `_fair_order` as a sort."""

INDEXES: dict[str, list[tuple[str, list[tuple[str, int]], bool]]] = {
    TOKENS: [
        ("uniq_tokens_address", [("address", ASCENDING)], True),
        ("idx_tokens_fingerprints", [("fingerprints", ASCENDING)], False),
        ("idx_tokens_discovered", [("created_at", DESCENDING)], False),
        ("idx_tokens_unresolved_due", [("unresolved.checked_at", ASCENDING), ("address", ASCENDING)], False),
    ],
    TOKEN_URLS: [
        ("uniq_token_urls_address_url", [("address", ASCENDING), ("url", ASCENDING)], True),
        ("idx_token_urls_url", [("url", ASCENDING), ("address", ASCENDING)], False),
        # (address, url) close both retry indexes, so the fair order is the index order (no in-memory
        # sort, and the limit stops the scan early).
        ("idx_token_urls_due", [("status", ASCENDING), *_FAIR_SORT], False),
        ("idx_token_urls_platform_due", [("status", ASCENDING), ("platform", ASCENDING), ("cause", ASCENDING),
                                         *_FAIR_SORT], False),
        # Never-recorded elements (`checked_at = NEVER`) in creation order: health lists the oldest
        # and counts them up to a bound without sorting every one.
        ("idx_token_urls_never", [("status", ASCENDING), ("checked_at", ASCENDING), ("created_at", ASCENDING)],
         False),
    ],
    URL_STATES: [("uniq_url_states_url", [("url", ASCENDING)], True)],
    SPEND_LEDGER: [("uniq_spend_ledger_account_day", [("account", ASCENDING), ("day", ASCENDING)], True)],
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
"""(name, keys, unique) per collection; created idempotently when the store opens."""

_V1_ARRAY_INDEXES = ("idx_tokens_social_url_status", "idx_tokens_social_url_url")
"""Indexes of schema version 1 over the embedded `social_urls` array (dropped by the upgrade)."""

_INDEX_OPTIONS_CONFLICT = 85
"""Server code for "an index with these keys exists under another name / other options"."""

_INDEX_KEY_SPECS_CONFLICT = 86
"""Server code for "an index of this name exists with other keys": an index cannot be altered, and
a name names one index, so an index whose keys changed between releases is refused until dropped."""


class IndexConflictError(RuntimeError):
    """The database holds an index that keeps the store from having one it relies on (same name with
    other keys or options, or the same keys without the uniqueness the store needs)."""


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


_CANDIDATE_PROJECTION = {"_id": 0, "address": 1, "url": 1, "status": 1, "attempts": 1, "checked_at": 1,
                         "platform": 1, "detail": 1, "cause": 1}


def element_filter(address: str, url: str, fence: int) -> dict[str, Any]:
    """A fenced element update's filter: it matches exactly the elements `write_refusal.element_admits`
    lets a write with `fence` change (checks 1 and 2), so the rule holds however holders race."""
    return {"address": address, "url": url, "fence": {"$lte": fence}, "status": {"$ne": KEPT_STATUS.value}}


def state_filter(url: str, fence: int, expect_version: int | None) -> dict[str, Any]:
    """A fenced URL-state update's filter: it matches exactly the states `write_refusal.state_admits`
    lets a write with `fence` on `expect_version` change (checks 3 and 4); with no state there is
    nothing to match and an upsert inserts it. Version 0 is "no version yet": every write moves it
    to 1 or more."""
    flt: dict[str, Any] = {"url": url, "fence": {"$lte": fence}}
    if expect_version is not None:
        flt["version"] = expect_version if expect_version else {"$exists": False}
    return flt


def q_token_by_address(address: str) -> MongoQuery:
    return MongoQuery(TOKENS, {"address": address}, {"_id": 0})


def q_urls_by_address(address: str) -> MongoQuery:
    return MongoQuery(TOKEN_URLS, {"address": address}, {"_id": 0}, [("address", ASCENDING)])


def q_holders(url: str, limit: int) -> MongoQuery:
    return MongoQuery(TOKEN_URLS, {"url": url}, {"_id": 0}, [("address", ASCENDING)], limit=limit)


def q_element(address: str, url: str) -> MongoQuery:
    return MongoQuery(TOKEN_URLS, {"address": address, "url": url}, {"_id": 0})


def q_existing_addresses(addresses: Sequence[str]) -> MongoQuery:
    """One indexed `$in`, never one query per address."""
    return MongoQuery(TOKENS, {"address": {"$in": list(addresses)}}, {"_id": 0, "address": 1})


def q_url_state(url: str) -> MongoQuery:
    """The dedupe gate and the per-URL budget: one unique-index lookup, whatever the holders."""
    return MongoQuery(URL_STATES, {"url": url}, {"_id": 0}, limit=1)


def q_due_by_status(status: str, checked_before: datetime, limit: int) -> MongoQuery:
    return MongoQuery(
        TOKEN_URLS,
        {"status": status, "checked_at": {"$lte": checked_before}, "platform": {"$ne": None}},
        _CANDIDATE_PROJECTION,
        _FAIR_SORT,
        limit,
    )


def q_due_by_status_platform(status: str, platform: str, checked_before: datetime, limit: int) -> MongoQuery:
    return MongoQuery(
        TOKEN_URLS,
        {"status": status, "platform": platform, "cause": Cause.NO_GENERATOR.value,
         "checked_at": {"$lte": checked_before}},
        _CANDIDATE_PROJECTION,
        _FAIR_SORT,
        limit,
    )


def q_due_among_addresses(statuses: Sequence[str], addresses: Sequence[str], checked_before: datetime) -> MongoQuery:
    return MongoQuery(
        TOKEN_URLS,
        {"address": {"$in": list(addresses)}, "status": {"$in": list(statuses)},
         "checked_at": {"$lte": checked_before}, "platform": {"$ne": None}},
        _CANDIDATE_PROJECTION,
    )


_WAITING_PROJECTION = {**_CANDIDATE_PROJECTION, "created_at": 1}


def q_waiting(
    status: str, since_before: datetime, limit: int, recorded: bool, platform: str | None = None,
    canonical_only: bool = True,
) -> MongoQuery:
    """Health: elements of one status (and, for `unsupported` narrowed to a platform, that platform
    with the cause "no generator") that waited since at or before `since_before`, oldest first:
    recorded ones by their last recording (a (status, checked_at) range), never-recorded ones by
    their creation (the `checked_at = NEVER` range, which only holds what no run has reached yet:
    small unless something is stuck, which is what a health check reports)."""
    flt: dict[str, Any] = {"status": status}
    if platform is not None:
        flt.update(platform=platform, cause=Cause.NO_GENERATOR.value)
    elif canonical_only:
        flt["platform"] = {"$ne": None}
    # Recorded ones in the full fair order (the index's): which of equal times make the limit never
    # depends on the order documents happen to be stored in (a restored store lists what the original
    # did). Never-recorded ones in creation order; `q_waiting_ties` completes the ties at the limit.
    if recorded:
        flt["checked_at"] = {"$gt": NEVER, "$lte": since_before}
        return MongoQuery(TOKEN_URLS, flt, _WAITING_PROJECTION, _FAIR_SORT, limit)
    flt.update(checked_at=NEVER, created_at={"$lte": since_before})
    return MongoQuery(TOKEN_URLS, flt, _WAITING_PROJECTION, [("created_at", ASCENDING)], limit)


def q_waiting_ties(listing: MongoQuery, created_at: datetime) -> MongoQuery:
    """The never-recorded elements of `listing` (a `q_waiting` of them) created at exactly
    `created_at`, the last one it listed: with them, the oldest are the same whatever order equal
    creation times are stored in."""
    return MongoQuery(listing.collection, {**listing.filter, "created_at": created_at}, listing.projection)


def q_object_id_by_platform_key(kind: ObjectKind | str, platform_key: str) -> MongoQuery:
    return MongoQuery(_collection_of(kind), {"platform_key": platform_key}, {"_id": 1})


def q_metrics_of_object(kind: ObjectKind | str, object_id: str) -> MongoQuery:
    return MongoQuery(
        METRICS,
        {"object": ObjectKind(kind).value, "object_id": _ref(object_id)},
        {"_id": 0, "metric": 1, "value": 1},
    )


def q_links_by_token_entry(token_address: str, entry_url: str) -> MongoQuery:
    """Rides the (token_address, created_at) prefix; no entry_url index needed."""
    return MongoQuery(TOKEN_LINKS, {"token_address": token_address, "entry_url": entry_url}, {"_id": 0})


def q_unresolved_due(checked_before: datetime) -> MongoQuery:
    """Tokens holding a raw value due by `checked_before` (select_unresolved orders and limits the
    values themselves)."""
    return MongoQuery(TOKENS, {"unresolved.checked_at": {"$lte": checked_before}}, {"_id": 0, "address": 1,
                                                                                   "unresolved": 1})


QUERIES: dict[str, Callable[..., MongoQuery]] = {
    "token_by_address": q_token_by_address,
    "urls_by_address": q_urls_by_address,
    "element": q_element,
    "holders": q_holders,
    "existing_addresses": q_existing_addresses,
    "url_state": q_url_state,
    "due_by_status": q_due_by_status,
    "due_by_status_platform": q_due_by_status_platform,
    "due_among_addresses": q_due_among_addresses,
    "object_id_by_platform_key": q_object_id_by_platform_key,
    "metrics_of_object": q_metrics_of_object,
    "links_by_token_entry": q_links_by_token_entry,
    "unresolved_due": q_unresolved_due,
    "waiting": q_waiting,
}
"""The hot-path reads by name; `MongoStore.explain(name, *params)` plans exactly these."""


def _plan_stages(node: Any) -> Iterator[str]:
    """Stage names of a plan: MongoDB's `stage`s, or the `Node Type`s of the PostgreSQL plan FerretDB
    answers with (docs/architecture.md, "Mongo-protocol servers")."""
    if isinstance(node, dict):
        stage = node.get("stage", node.get("Node Type"))
        if isinstance(stage, str):
            yield stage
        for value in node.values():
            yield from _plan_stages(value)
    elif isinstance(node, list):
        for item in node:
            yield from _plan_stages(item)


def _opt_utc(value: datetime | None) -> datetime | None:
    return None if value is None else ensure_utc(value)


def _checked_out(value: datetime | None) -> datetime:
    return NEVER if value is None else ensure_utc(value)


def _checked_in(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    value = ensure_utc(value)
    return None if value <= NEVER else value


def _answered_at_out(value: datetime | None) -> dict[str, Any]:
    """A URL state's answer time to the microsecond: a BSON date keeps milliseconds, so the rest
    goes in `answered_at_us`. A failed call is counted in the streak only when it went out after the
    answer the state holds, and two calls of one URL can fall in one millisecond
    (docs/architecture.md, "Mongo-protocol servers")."""
    if value is None:
        return {"answered_at": None, "answered_at_us": None}
    value = ensure_utc(value)
    return {"answered_at": value, "answered_at_us": value.microsecond % 1000}


def _answered_at_in(doc: Mapping[str, Any]) -> datetime | None:
    value = _opt_utc(doc.get("answered_at"))
    rest = doc.get("answered_at_us")
    if value is None or not rest:  # a state written before the field: its millisecond
        return value
    return value + timedelta(microseconds=int(rest))  # a BSON date holds whole milliseconds


def _url(el: Mapping[str, Any]) -> SocialUrl:
    cause = el.get("cause")
    return SocialUrl(
        url=el["url"],
        status=FetchStatus(el["status"]),
        attempted_at=_opt_utc(el.get("attempted_at")),
        attempts=int(el.get("attempts", 0)),
        checked_at=_checked_in(el.get("checked_at")),
        cause=Cause(cause) if cause else None,
        detail=el.get("detail"),
        fence=int(el.get("fence", 0)),
    )


def _open_call_out(call: OpenCall | None) -> dict[str, Any] | None:
    if call is None:
        return None
    return {"provider": call.provider, "subject": call.subject, "started_at": ensure_utc(call.started_at),
            "fence": call.fence}


def _state(doc: Mapping[str, Any]) -> UrlState:
    req = doc.get("request")
    request = None
    if isinstance(req, dict) and req.get("provider") and req.get("request_id") and req.get("submitted_at"):
        request = PaidRequest(
            provider=req["provider"], request_id=req["request_id"], submitted_at=ensure_utc(req["submitted_at"])
        )
    call = doc.get("open_call")
    open_call = None
    if isinstance(call, dict) and call.get("provider") and call.get("started_at"):
        open_call = OpenCall(provider=call["provider"], subject=call.get("subject") or doc["url"],
                             started_at=ensure_utc(call["started_at"]), fence=int(call.get("fence", 0)))
    return UrlState(
        url=doc["url"],
        open_call=open_call,
        platform=doc.get("platform") or "unknown",
        status=FetchStatus(doc["status"]),
        attempted_at=_opt_utc(doc.get("attempted_at")),
        attempts=int(doc.get("attempts", 0)),
        source_token=doc.get("source_token"),
        fence=int(doc.get("fence", 0)),
        request=request,
        updated_at=_opt_utc(doc.get("updated_at")),
        answer=FetchStatus(doc["answer"]) if doc.get("answer") else None,
        answered_at=_answered_at_in(doc),
        streak=int(doc.get("streak", 0)),
        engine_failures=int(doc.get("engine_failures", 0)),
        version=int(doc.get("version", 0)),
    )


def _candidate(doc: Mapping[str, Any]) -> Candidate:
    return Candidate(
        address=doc["address"],
        url=doc["url"],
        status=FetchStatus(doc["status"]),
        attempts=int(doc.get("attempts", 0)),
        checked_at=_checked_in(doc.get("checked_at")),
        platform=doc.get("platform"),
        detail=doc.get("detail"),
    )


def _waiting(doc: Mapping[str, Any]) -> WaitingElement:
    checked = _checked_in(doc.get("checked_at"))
    cause = doc.get("cause")
    return WaitingElement(
        address=doc["address"],
        url=doc["url"],
        status=FetchStatus(doc["status"]),
        attempts=int(doc.get("attempts", 0)),
        since=checked if checked is not None else ensure_utc(doc["created_at"]),
        recorded=checked is not None,
        platform=doc.get("platform"),
        cause=Cause(cause) if cause else None,
        detail=doc.get("detail"),
    )


def _unresolved(doc: Mapping[str, Any]) -> UnresolvedValue:
    return UnresolvedValue(
        field=doc["field"],
        value=doc["value"],
        reason=doc.get("reason") or "",
        attempts=int(doc.get("attempts", 0)),
        checked_at=_checked_in(doc.get("checked_at")),
    )


def _unresolved_doc(v: UnresolvedValue) -> dict[str, Any]:
    return {"field": v.field, "value": v.value, "reason": v.reason, "attempts": v.attempts,
            "checked_at": _checked_out(v.checked_at)}


def _write_key(link_doc: Mapping[str, Any]) -> tuple[int, str]:
    """Which write a link document came from, in write order: (fence, write id); links stored before
    fences existed sort first."""
    return int(link_doc.get("fence", 0)), str(link_doc.get("write", ""))


def _fair_order(c: Candidate) -> tuple[datetime, str, str]:
    """Oldest first; never-recorded elements before all others; address and URL break ties."""
    return (_checked_out(c.checked_at), c.address, c.url)


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
        # Every datetime read back is tz-aware whatever the client's own `tz_aware` says (a naive one
        # compared with now() raises): the database handle decodes them so, nested ones included.
        self.db: Any = self._client.get_database(
            db_name, codec_options=self._client.codec_options.with_options(tz_aware=True)
        )
        try:
            self._ensure_indexes()
            self._migrate()
        except BaseException:
            self.close()  # do not leak the connection pool of a store that never opened
            raise

    def _ensure_indexes(self) -> None:
        for coll, indexes in INDEXES.items():
            for name, keys, unique in indexes:
                try:
                    self._create_index(coll, name, keys, unique)
                except OperationFailure as exc:
                    if exc.code != _INDEX_KEY_SPECS_CONFLICT or unique:
                        raise self._conflict(coll, name, keys, unique) from exc
                    # An older release built this name with fewer keys (the retry and unresolved
                    # indexes gained their tie-breakers): rebuild it. Only non-unique indexes are
                    # rebuilt; they serve speed, while a unique one's keys decide what is stored.
                    with contextlib.suppress(OperationFailure):  # a concurrent opener dropped it
                        self.db[coll].drop_index(name)
                    self._create_index(coll, name, keys, unique)
        # A server may accept a create_index it did not carry out (FerretDB answers ok when an index
        # of that name exists without `unique`): what stands is checked, not assumed.
        for coll, indexes in INDEXES.items():
            for name, keys, unique in indexes:
                if not self._has_index(coll, name, keys, unique):
                    raise self._conflict(coll, name, keys, unique)

    def _create_index(self, coll: str, name: str, keys: list[tuple[str, int]], unique: bool) -> None:
        try:
            self.db[coll].create_index(keys, name=name, unique=unique)
        except OperationFailure as exc:
            if exc.code != _INDEX_OPTIONS_CONFLICT or not self._has_equivalent(coll, keys, unique):
                raise
            # The same index exists under another name (made by hand or an older
            # deployment): it serves the queries and the uniqueness equally well.

    def _indexes(self, coll: str) -> dict[str, tuple[list[tuple[str, int]], bool]]:
        return {
            name: ([(k, int(d)) for k, d in info["key"]], bool(info.get("unique", False)))
            for name, info in self.db[coll].index_information().items()
        }

    def _has_equivalent(self, coll: str, keys: list[tuple[str, int]], unique: bool) -> bool:
        return (keys, unique) in self._indexes(coll).values()

    def _has_index(self, coll: str, name: str, keys: list[tuple[str, int]], unique: bool) -> bool:
        """The index `name` with these keys and uniqueness, or an equivalent under another name."""
        found = self._indexes(coll)
        return found.get(name) == (keys, unique) or (keys, unique) in found.values()

    def _conflict(self, coll: str, name: str, keys: list[tuple[str, int]], unique: bool) -> IndexConflictError:
        found = self._indexes(coll)
        same_keys = [n for n, (k, _u) in found.items() if k == keys]
        have = ", ".join(f"{n} {k} unique={u}" for n, (k, u) in sorted(found.items()) if n == name or n in same_keys)
        return IndexConflictError(
            f"MongoDB database {self.db_name!r}, collection {coll!r}: the store needs index {name!r} on "
            f"{keys} unique={unique}, but the database has {have or 'none of that name or keys'}; drop the "
            f"conflicting index (db.{coll}.dropIndex(<name>)) and open the store again"
        )

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
                    "detail": None, "fence": 0,
                    "created_at": ensure_utc(created_at),
                }},
                upsert=True,
            )
        except DuplicateKeyError:  # a concurrent creator inserted it, the same pending element
            return False
        return result.upserted_id is not None

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
        """Stage names of the winning plan of the named hot-path read (needs a server)."""
        try:
            build = QUERIES[query_name]
        except KeyError:
            raise ValueError(f"unknown query {query_name!r}; expected one of {sorted(QUERIES)}") from None
        planner = self._find(build(*params)).explain().get("queryPlanner", {})
        return list(_plan_stages(planner.get("winningPlan", planner.get("Plan", {}))))

    # ----------------------------------------------------------------- tokens

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

    # ----------------------------------------------------------------- elements and URL states

    def find_element(self, address: str, url: str) -> SocialUrl | None:
        q = q_element(address, url)
        doc = self.db[q.collection].find_one(q.filter, q.projection)
        return None if doc is None else _url(doc)

    def addresses_with_fingerprint(self, fingerprint: str, limit: int = 100) -> list[str]:
        """The tokens carrying `fingerprint` (by the multikey index on `fingerprints`), in address order."""
        docs = self.db[TOKENS].find({"fingerprints": fingerprint}, {"address": 1, "_id": 0}).sort(
            "address", ASCENDING).limit(limit)
        return [doc["address"] for doc in docs]

    def find_url_state(self, url: str) -> UrlState | None:
        q = q_url_state(url)
        doc = self.db[q.collection].find_one(q.filter, q.projection)
        return None if doc is None else _state(doc)

    def find_holders(self, url: str, limit: int) -> list[tuple[str, SocialUrl]]:
        if limit < 1:
            return []
        return [(doc["address"], _url(doc)) for doc in self._find(q_holders(url, limit))]

    def _stored_state(self, url: str) -> StoredState:
        doc = self.db[URL_STATES].find_one({"url": url}, {"fence": 1, "version": 1})
        return NO_STATE if doc is None else StoredState(int(doc.get("fence", 0)), int(doc.get("version", 0)))

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

    def _update_state(self, url: str, fence: int, update: Mapping[str, Any], expect_version: int | None) -> bool:
        """Update the URL state if no larger fence was applied to it and (given `expect_version`) it is
        still at that version, inserting it when absent; False when refused. Two holders writing a
        URL's first state race to insert it, and the loser's upsert fails on the unique url whatever
        its fence; it is retried as a plain conditional update."""
        flt = state_filter(url, fence, expect_version)
        try:
            self.db[URL_STATES].update_one(flt, update, upsert=True)
        except DuplicateKeyError:
            return self.db[URL_STATES].update_one(flt, update).matched_count == 1
        return True

    def _state_refusal(self, url: str, fence: int, expect_version: int | None) -> WriteOutcome:
        """Why a conditional state write matched nothing: a newer holder's fence, or a version moved on
        (also when the state read now admits the write: another holder moved it on in between)."""
        return state_refusal(self._stored_state(url), fence, expect_version) or WriteOutcome(WriteResult.STALE)

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
            committed = self._update_state(write.url, f, {"$set": fields, "$inc": moves}, write.expect_version)
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
                "detail": e.detail,
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

    def _write_graph(
        self, address: str, url: str, planned: Sequence[PlannedLink], now: datetime, deltas: Counter[str]
    ) -> list[TokenLink]:
        links: list[TokenLink] = []
        for pl in planned:
            object_id = self._upsert_object(pl.kind, pl.obj, now, deltas)
            if pl.obj.metrics:
                self._record_first_metrics(pl.kind, object_id, pl.obj.metrics, now, deltas)
            links.append(
                TokenLink(
                    token_address=address,
                    object=pl.kind,
                    object_id=object_id,
                    entry_url=url,
                    platform=pl.obj.platform.value,
                    subtype=pl.obj.subtype,
                    link_depth=pl.depth,
                    created_at=now,
                )
            )
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

    def save_paid_request(self, url: str, platform: str, fence: int, request: PaidRequest) -> WriteResult:
        applied = self._update_state(
            url,
            fence,
            {
                "$set": {
                    "fence": fence,
                    "request": {"provider": request.provider, "request_id": request.request_id,
                                "submitted_at": ensure_utc(request.submitted_at)},
                    "open_call": None,
                    "updated_at": utcnow(),
                },
                "$inc": {"version": 1},
                "$setOnInsert": {"platform": platform, "status": FetchStatus.PENDING.value,
                                 "attempted_at": None, "attempts": 0, "source_token": None, "answer": None,
                                 "answered_at": None, "streak": 0, "engine_failures": 0},
            },
            None,
        )
        return WriteResult.APPLIED if applied else WriteResult.FENCED

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
        )
        return WriteResult.APPLIED if applied else WriteResult.FENCED

    def select_candidates(self, query: CandidateQuery) -> list[Candidate]:
        cutoff = ensure_utc(query.checked_before)
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
            for status in sorted(query.statuses):
                if status is FetchStatus.UNSUPPORTED and query.unsupported_platforms is not None:
                    for platform in sorted(query.unsupported_platforms):
                        docs += list(self._find(q_due_by_status_platform(status.value, platform, cutoff, query.limit)))
                else:
                    docs += list(self._find(q_due_by_status(status.value, cutoff, query.limit)))
        return sorted(map(_candidate, docs), key=_fair_order)[: query.limit]

    def oldest_elements(
        self, statuses: Collection[FetchStatus], limit: int, checked_before: datetime | None = None
    ) -> list[Candidate]:
        if limit < 1 or not statuses:
            return []
        cutoff = ensure_utc(checked_before or datetime.max.replace(tzinfo=UTC))
        docs: list[Mapping[str, Any]] = []
        for status in sorted({FetchStatus(s) for s in statuses}):
            q = q_due_by_status(status.value, cutoff, limit)
            flt = {k: v for k, v in q.filter.items() if k != "platform"}  # non-canonical ones included
            docs += list(self._find(MongoQuery(q.collection, flt, q.projection, q.sort, q.limit)))
        return sorted(map(_candidate, docs), key=_fair_order)[:limit]

    def status_counts(self) -> StatusCounts:
        counts = self.counts()
        return StatusCounts(counts.by_platform, counts.tokens)

    # ----------------------------------------------------------------- spend ledger

    def _add_spend(self, line: SpendLine) -> None:
        """The ledger's `$inc`, right after the URL state that counts the same requests committed.
        Without multi-document transactions a crash between the two leaves them apart: the hourly
        reconciliation reports it. A server gone mid-write fails neither the recorded result nor
        repeats its write for a figure (as the counters)."""
        flt = {"account": line.account, "day": line.day}
        moves = {"$inc": {"requests": line.requests, "cost_usd": line.cost_usd}}
        coll = self.db[SPEND_LEDGER]
        try:
            try:
                coll.update_one(flt, moves, upsert=True)
            except DuplicateKeyError:  # the day's first upsert lost a race to another writer's
                coll.update_one(flt, moves)
        except PyMongoError as exc:
            log.warning("spend ledger not moved (%s: %s): %s %s +%d; the hourly reconciliation reports it",
                        type(exc).__name__, exc, line.account, line.day, line.requests)

    def spend_rows(self, since_day: str) -> list[SpendRow]:
        docs = self.db[SPEND_LEDGER].find({"day": {"$gte": since_day}}).sort([("account", ASCENDING), ("day", ASCENDING)])
        return [SpendRow(str(d["account"]), str(d["day"]), int(d.get("requests", 0)), float(d.get("cost_usd", 0.0)))
                for d in docs]

    def spend_totals(self) -> SpendTotals:
        ledger = {str(r["_id"]): int(r["n"]) for r in self.db[SPEND_LEDGER].aggregate(
            [{"$group": {"_id": "$account", "n": {"$sum": "$requests"}}}])}
        states = {str(r["_id"]): int(r["n"]) for r in self.db[URL_STATES].aggregate(
            [{"$match": {"paid_requests": {"$gt": 0}}}, {"$group": {"_id": "$platform", "n": {"$sum": "$paid_requests"}}}])}
        return SpendTotals(ledger, states)

    # ----------------------------------------------------------------- counters

    def _count(self, deltas: Mapping[str, int]) -> None:
        """Move the counters by what a write just did, in one atomic update of the counters' document:
        `$inc` is applied by the server, so racing writers in any number of processes each add their
        own change (docs/architecture.md, "Health figures"). Counters the server does not take (it
        went away mid-write) are left to the hourly recount: a recorded result is never failed, nor
        its write repeated, for a figure."""
        try:
            self._inc(deltas)
        except PyMongoError as exc:
            log.warning("store counters not moved (%s: %s): %s; the hourly recount repairs them",
                        type(exc).__name__, exc, dict(deltas))

    def _inc(self, deltas: Mapping[str, int]) -> None:
        moves = {f"n.{key}": int(d) for key, d in sorted(deltas.items()) if d}
        if not moves:
            return
        coll = self.db[STORE_COUNTS]
        try:
            coll.update_one({"_id": COUNTS_DOC}, {"$inc": moves}, upsert=True)
        except DuplicateKeyError:  # the counters' first upsert lost a race to another writer's
            coll.update_one({"_id": COUNTS_DOC}, {"$inc": moves})

    def counts(self) -> StoreCounts:
        return StoreCounts.of(self._counter_values().items())

    def _counter_values(self) -> dict[str, int]:
        doc = self.db[STORE_COUNTS].find_one({"_id": COUNTS_DOC}) or {}
        return {key: int(n) for key, n in (doc.get("n") or {}).items()}

    def _counter(self, key: str) -> int:
        return self._counter_values().get(key, 0)

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

    def _build_counts(self) -> None:
        """The upgrade that brings the counters: set from a recount (concurrent openers set the same)."""
        counts = {f"n.{key}": n for key, n in self._recount().items()}
        with contextlib.suppress(DuplicateKeyError):  # a concurrent opener made it: it set the same
            self.db[STORE_COUNTS].update_one({"_id": COUNTS_DOC}, {"$set": counts}, upsert=True)

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

    def count_held_back(self, query: CandidateQuery, bound: int) -> int:
        if bound < 1:
            return 0
        after = ensure_utc(query.checked_before)
        if query.addresses is not None:
            found = self.db[TOKEN_URLS].find(
                {"address": {"$in": list(dict.fromkeys(query.addresses))},
                 "status": {"$in": sorted(s.value for s in query.statuses)},
                 "checked_at": {"$gt": after}, "platform": {"$ne": None}},
                {"status": 1, "platform": 1, "cause": 1},
            )
            count = sum(held_back_counts(query, FetchStatus(d["status"]), d.get("platform"), d.get("cause"))
                        for d in found)
            return min(count, bound)
        count = 0
        for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
            if count >= bound:
                break
            flt: dict[str, Any] = {"status": status.value, "checked_at": {"$gt": after}}
            if platform is not None:
                flt.update(platform=platform, cause=Cause.NO_GENERATOR.value)
            count += int(self.db[TOKEN_URLS].count_documents(flt, limit=bound - count))
        return min(count, bound)

    def waiting_elements(
        self, query: CandidateQuery, *, canonical_only: bool = True, count_bound: int = WAITING_COUNT_BOUND
    ) -> WaitingElements:
        if query.addresses is not None:
            raise ValueError("waiting_elements looks at every token: query.addresses must be None")
        if count_bound < 1:
            raise ValueError(f"count_bound must be >= 1, got {count_bound!r}")
        cutoff = ensure_utc(query.checked_before)
        count = 0
        docs: list[Mapping[str, Any]] = []
        for status, platform in waiting_parts(query.statuses, query.unsupported_platforms):
            for recorded in (False, True):
                q = q_waiting(status.value, cutoff, query.limit, recorded, platform, canonical_only)
                if count < count_bound:
                    count += int(self.db[q.collection].count_documents(q.filter, limit=count_bound - count))
                got = list(self._find(q))
                if not recorded and len(got) >= query.limit:
                    got += list(self._find(q_waiting_ties(q, got[-1]["created_at"])))
                docs += got
        return longest_waiting(map(_waiting, docs), count, count_bound, query.limit)

    # ----------------------------------------------------------------- unresolved raw values

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

    # ----------------------------------------------------------------- objects and metrics

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """`$setOnInsert` upsert on the unique platform_key; never overwrites."""
        deltas: Counter[str] = Counter()
        try:
            return self._upsert_object(kind, obj, now, deltas)
        finally:
            self._count(deltas)

    def _upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None, deltas: Counter[str]) -> str:
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
        doc = self.db[_collection_of(kind)].find_one({"_id": ObjectId(object_id)})
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

    # ----------------------------------------------------------------- token_links

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

    def __repr__(self) -> str:
        return f"MongoStore(db={self.db_name!r})"
