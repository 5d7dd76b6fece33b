"""The Mongo store's query documents: the fenced writes' filters, which match exactly what
`write_refusal` admits, and the hot-path reads (`MongoQuery`), named in `QUERIES` so that
`MongoStore.explain` plans the very filter the store runs (docs/architecture.md, "Mongo-protocol
servers").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bson import ObjectId
from pymongo import ASCENDING

from social_recording.domain.graph import ObjectKind
from social_recording.domain.status import Cause
from social_recording.store._codec import object_collection
from social_recording.store.mongo.schema import (
    _FAIR_SORT,
    _NEVER_SORT,
    METRICS,
    NEVER,
    TOKEN_LINKS,
    TOKEN_URLS,
    TOKENS,
    URL_STATES,
)
from social_recording.store.write_refusal import KEPT_STATUS


@dataclass(frozen=True)
class MongoQuery:
    """One hot-path read: the store runs it and `explain()` plans the very same filter."""

    collection: str
    filter: dict[str, Any]
    projection: dict[str, Any] | None = None
    sort: list[tuple[str, int]] | None = None
    limit: int | None = None


def _ref(object_id: str) -> ObjectId | str:
    """Object references are stored as ObjectId when they are one, so `$lookup` joins work."""
    return ObjectId(object_id) if ObjectId.is_valid(object_id) else object_id


_CANDIDATE_PROJECTION = {"_id": 0, "address": 1, "url": 1, "status": 1, "attempts": 1, "checked_at": 1,
                         "platform": 1, "detail": 1, "cause": 1, "due_at": 1}


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


def q_due_by_status(status: str, due_by: datetime, limit: int) -> MongoQuery:
    return MongoQuery(
        TOKEN_URLS,
        {"status": status, "due_at": {"$lte": due_by}, "platform": {"$ne": None}},
        _CANDIDATE_PROJECTION,
        _FAIR_SORT,
        limit,
    )


def q_due_by_status_platform(status: str, platform: str, due_by: datetime, limit: int) -> MongoQuery:
    return MongoQuery(
        TOKEN_URLS,
        {"status": status, "platform": platform, "cause": Cause.NO_GENERATOR.value,
         "due_at": {"$lte": due_by}},
        _CANDIDATE_PROJECTION,
        _FAIR_SORT,
        limit,
    )


def q_due_among_addresses(statuses: Sequence[str], addresses: Sequence[str], due_by: datetime) -> MongoQuery:
    return MongoQuery(
        TOKEN_URLS,
        {"address": {"$in": list(addresses)}, "status": {"$in": list(statuses)},
         "due_at": {"$lte": due_by}, "platform": {"$ne": None}},
        _CANDIDATE_PROJECTION,
    )


_WAITING_PROJECTION = {**_CANDIDATE_PROJECTION, "created_at": 1}


def q_waiting(
    status: str, since_before: datetime, limit: int, recorded: bool, platform: str | None = None,
    canonical_only: bool = True,
) -> MongoQuery:
    """Health: elements of one status (and, for `unsupported` narrowed to a platform, that platform
    with the cause "no generator") due by `since_before`, longest due first: recorded ones by
    their due time (a (status, due_at) range), never-recorded ones by
    their creation (the `checked_at = NEVER` range, which only holds what no run has reached yet:
    small unless something is stuck, which is what a health check reports)."""
    flt: dict[str, Any] = {"status": status}
    if platform is not None:
        flt.update(platform=platform, cause=Cause.NO_GENERATOR.value)
    elif canonical_only:
        flt["platform"] = {"$ne": None}
    # Both in the full fair order, which is their index's: the limit stops the scan, and which of equal
    # times make the limit never depends on the order documents happen to be stored in (a restored
    # store lists what the original did).
    if recorded:
        flt["due_at"] = {"$gt": NEVER, "$lte": since_before}
        return MongoQuery(TOKEN_URLS, flt, _WAITING_PROJECTION, _FAIR_SORT, limit)
    flt.update(checked_at=NEVER, created_at={"$lte": since_before})
    return MongoQuery(TOKEN_URLS, flt, _WAITING_PROJECTION, _NEVER_SORT, limit)


def q_object_id_by_platform_key(kind: ObjectKind | str, platform_key: str) -> MongoQuery:
    return MongoQuery(object_collection(kind), {"platform_key": platform_key}, {"_id": 1})


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
