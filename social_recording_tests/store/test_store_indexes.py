"""Every hot-path query rides an index: SQLite's EXPLAIN QUERY PLAN on the very SQL the store runs,
and MongoDB's winning plan over the wire (FerretDB's plans use no index: see ferretdb_differences.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import PaidRequest, TokenProfile, UnresolvedValue
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import CandidateQuery, MongoStore, SqliteStore
from social_recording.store.sqlite import QUERIES
from social_recording_tests.ferretdb_differences import NO_SECONDARY_INDEX_IN_PLANS
from social_recording_tests.store._seed import planned, record_call, record_no_call, url_write
from test_support.mongo_server import MongoServer

T0 = datetime(2025, 3, 1, tzinfo=UTC)
T1 = datetime(2025, 3, 2, tzinfo=UTC)
INDEXED = re.compile(r"\bUSING (COVERING INDEX|INDEX|PRIMARY KEY|INTEGER PRIMARY KEY)\b")
FULL_SCAN = re.compile(r"^SCAN (?!\(subquery-\d+\))")
"""A table read whole; the rows of a bounded subquery being counted are not one."""
TEMP_SORT = "USE TEMP B-TREE"


def _fill(store: Any) -> str:
    """A little data, so the planner sees real tables; returns an object id."""
    for i in range(30):
        urls = [f"https://x.com/u{i}", f"https://t.me/g{i % 5}", f"https://github.com/o/r{i}"]
        raw = (UnresolvedValue(field="website", value=f"https://bit.ly/{i}", reason="timeout",
                               checked_at=T0 if i % 2 else None),)
        store.create_pending_token(TokenProfile(address=f"M{i:03d}", urls=urls, unresolved=raw), now=T0)
        record_call(store, f"M{i:03d}", urls[0], FetchStatus.OK if i % 2 else FetchStatus.ERROR, T0,
                    links=[planned(f"tweet:{i}")])
        record_no_call(store, f"M{i:03d}", urls[2], FetchStatus.UNSUPPORTED, T0, cause=Cause.NO_GENERATOR)
    oid: str = store.upsert_object(
        ObjectKind.CONTENT, SocialObject(platform=Platform.X, platform_key="tweet:1", subtype="tweet"), now=T0
    )
    store.record_first_metrics(ObjectKind.CONTENT, oid, {"likes": 1.0}, T0)
    return oid


def assert_indexed(plan: list[str], expect: str) -> None:
    assert plan, "empty plan"
    assert any(INDEXED.search(line) for line in plan), plan
    assert not any(FULL_SCAN.match(line) for line in plan), plan
    assert any(expect in line for line in plan), (expect, plan)


@pytest.fixture()
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "plans.db")
    yield store
    store.close()


CUTOFF = "2025-03-02T00:00:00.000000+00:00"
SQLITE_CASES: dict[str, tuple[tuple[Any, ...], str]] = {
    "token_by_address": (("M001",), "sqlite_autoindex_tokens_1"),
    "urls_by_address": (("M001",), "sqlite_autoindex_token_urls_1"),
    "element": (("M001", "https://x.com/u1"), "sqlite_autoindex_token_urls_1"),
    "holders": (("https://x.com/u1", 20), "idx_token_urls_url"),
    "existing_addresses": ((["M001", "M002", "Z"],), "sqlite_autoindex_tokens_1"),
    "url_state": (("https://x.com/u1",), "PRIMARY KEY"),
    "due_by_status": (("error", CUTOFF, 50), "idx_token_urls_due"),
    "due_by_status_platform": (("unsupported", "github", CUTOFF, 50), "idx_token_urls_platform_due"),
    "oldest_by_status": (("exhausted", CUTOFF, 50), "idx_token_urls_due"),
    "due_among_addresses": ((["error", "pending"], ["M001", "M003"], CUTOFF), "sqlite_autoindex_token_urls_1"),
    "object_id_by_platform_key": (("content", "tweet:1"), "sqlite_autoindex_contents_1"),
    "object_by_id": (("content", 1), "INTEGER PRIMARY KEY"),
    "metrics_of_object": (("content", "1"), "PRIMARY KEY"),
    "links_by_token_entry": (("M001", "https://x.com/u1"), "idx_links_token_linked"),
    "delete_links": (("M001", "https://x.com/u1"), "idx_links_token_linked"),
    "unresolved_due": ((CUTOFF, 50), "idx_unresolved_due"),
    "waiting": (("error", CUTOFF, 50, True), "idx_token_urls_due"),
    "count_waiting": (("pending", CUTOFF, 50, False), "idx_token_urls_never"),
    "count_held_back": (("error", CUTOFF, 50), "idx_token_urls_due"),
}
ORDERED_BY_THE_INDEX = ("due_by_status", "due_by_status_platform", "oldest_by_status", "unresolved_due")
"""Limited, ordered queries: the index must deliver the order, so the LIMIT stops the scan early."""


def test_sqlite_health_reads_stop_at_their_bound(sqlite_store: SqliteStore) -> None:
    """The health checks' reads touch only an index and stop at their limit or count bound: listing
    the oldest never-recorded elements rides the partial index in creation order (no sort of every
    such element), and every count reads a covering index."""
    _fill(sqlite_store)
    listing = sqlite_store.explain("waiting", "pending", CUTOFF, 5, False)
    assert_indexed(listing, "idx_token_urls_never")
    assert not any(TEMP_SORT in line for line in listing), listing
    for recorded in (False, True):
        plan = sqlite_store.explain("count_waiting", "pending", CUTOFF, 50, recorded)
        assert any("COVERING INDEX" in line for line in plan), plan
    assert any("COVERING INDEX" in line for line in sqlite_store.explain("count_held_back", "error", CUTOFF, 50))


def test_every_named_query_is_covered() -> None:
    assert set(SQLITE_CASES) == set(QUERIES)


@pytest.mark.parametrize("name", sorted(SQLITE_CASES))
def test_sqlite_hot_query_uses_an_index(sqlite_store: SqliteStore, name: str) -> None:
    _fill(sqlite_store)
    params, expect = SQLITE_CASES[name]
    plan = sqlite_store.explain(name, *params)
    assert_indexed(plan, expect)
    if name in ORDERED_BY_THE_INDEX:
        assert not any(TEMP_SORT in line for line in plan), plan


def test_sqlite_every_statement_the_hot_methods_run_uses_an_index(sqlite_store: SqliteStore) -> None:
    """Trace what the store really executes (bound values inlined), then plan each statement."""
    oid = _fill(sqlite_store)
    conn = sqlite_store._conn()  # this thread's connection: the one the calls below use
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        sqlite_store.find_token("M001")
        sqlite_store.find_existing_addresses(["M001", "M002", "nope"])
        sqlite_store.find_element("M001", "https://x.com/u1")
        sqlite_store.find_url_state("https://x.com/u1")
        retry = frozenset({FetchStatus.ERROR, FetchStatus.PENDING, FetchStatus.UNSUPPORTED})
        sqlite_store.select_candidates(CandidateQuery(retry, T1, 5))
        sqlite_store.select_candidates(CandidateQuery(retry, T1, 5, None, frozenset({"github", "x"})))
        sqlite_store.select_candidates(CandidateQuery(retry, T1, 5, ("M002", "M004"), frozenset({"github"})))
        sqlite_store.oldest_elements([FetchStatus.PENDING, FetchStatus.ERROR], 5)
        record_call(sqlite_store, "M002", "https://t.me/g2", FetchStatus.OK, T1, links=[planned("tg:2")])
        record_no_call(sqlite_store, "M004", "https://t.me/g2", FetchStatus.OK, T1, copy_links_from="M002")
        record_no_call(sqlite_store, "M006", "https://t.me/g1", FetchStatus.ERROR, T1, cause=Cause.BACKOFF)
        sqlite_store.apply_url_write(url_write("M001", "https://x.com/u1", 1, FetchStatus.ERROR, T1))  # refused
        sqlite_store.save_paid_request("https://t.me/g3", "telegram", 10_000,
                                       PaidRequest(provider="apify", request_id="r", submitted_at=T1))
        sqlite_store.add_resolved_url("M003", "website", "https://coin.example", 1, T1)
        sqlite_store.update_unresolved("M005", UnresolvedValue(field="website", value="https://bit.ly/5"), 1)
        sqlite_store.update_unresolved("M007", UnresolvedValue(field="website", value="https://bit.ly/7"), 1,
                                       drop=True)
        sqlite_store.select_unresolved(T1, 5)
        sqlite_store.upsert_object(
            ObjectKind.CONTENT, SocialObject(platform=Platform.X, platform_key="tweet:1", subtype="tweet")
        )
        sqlite_store.get_object(ObjectKind.CONTENT, oid)
        sqlite_store.find_metrics(ObjectKind.CONTENT, oid)
        sqlite_store.find_links("M001", "https://x.com/u1")
    finally:
        conn.set_trace_callback(None)
    reads = [s for s in seen if re.match(r"\s*(SELECT|UPDATE|DELETE)\b", s, re.I)]
    assert len(reads) >= 30, seen
    for sql in reads:
        plan = [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
        assert any(INDEXED.search(line) for line in plan), (sql, plan)
        assert not any(FULL_SCAN.match(line) for line in plan), (sql, plan)


def test_sqlite_explain_rejects_an_unknown_query(sqlite_store: SqliteStore) -> None:
    with pytest.raises(ValueError, match="no_such_query"):
        sqlite_store.explain("no_such_query")


# ----------------------------------------------------------------------------- real MongoDB


@pytest.fixture()
def real_mongo_store(mongo_server: MongoServer) -> Iterator[MongoStore]:
    client: Any = mongo_server.client()
    try:
        with mongo_server.scratch_db() as db_name:
            yield MongoStore(client, db_name)
    finally:
        client.close()


MONGO_CASES: dict[str, tuple[Any, ...]] = {
    "token_by_address": ("M001",),
    "urls_by_address": ("M001",),
    "element": ("M001", "https://x.com/u1"),
    "holders": ("https://x.com/u1", 20),
    "existing_addresses": (["M001", "M002", "Z"],),
    "url_state": ("https://x.com/u1",),
    "due_by_status": ("error", T1, 50),
    "due_by_status_platform": ("unsupported", "github", T1, 50),
    "due_among_addresses": (["error", "pending"], ["M001", "M003"], T1),
    "object_id_by_platform_key": ("content", "tweet:1"),
    "metrics_of_object": ("content", "0123456789abcdef01234567"),
    "links_by_token_entry": ("M001", "https://x.com/u1"),
    "unresolved_due": (T1,),
    "waiting": ("error", T1, 50, True),
}
"""Parameters for each named Mongo query (test_mongo_store.py runs them all on mongomock too)."""


def test_mongo_cases_cover_every_named_query() -> None:
    from social_recording.store.mongo import QUERIES as MONGO_QUERIES

    assert set(MONGO_CASES) == set(MONGO_QUERIES)


@pytest.mark.ferretdb_differs(NO_SECONDARY_INDEX_IN_PLANS)
@pytest.mark.parametrize("name", sorted(MONGO_CASES))
def test_mongo_hot_query_uses_an_index(real_mongo_store: MongoStore, name: str) -> None:
    _fill(real_mongo_store)
    stages = real_mongo_store.explain(name, *MONGO_CASES[name])
    assert "IXSCAN" in stages or "IDHACK" in stages or "EXPRESS_IXSCAN" in stages, stages
    assert "COLLSCAN" not in stages, stages
    if name in ("due_by_status", "due_by_status_platform"):
        assert "SORT" not in stages, stages  # the index delivers the fair order: the limit stops early


@pytest.mark.ferretdb_differs(NO_SECONDARY_INDEX_IN_PLANS)
def test_mongo_listing_the_oldest_never_recorded_stops_at_the_limit(real_mongo_store: MongoStore) -> None:
    """Health lists the longest-waiting never-recorded elements in creation order from their index,
    never sorting every one of them."""
    _fill(real_mongo_store)
    stages = real_mongo_store.explain("waiting", "pending", T1, 5, False)
    assert "IXSCAN" in stages and "COLLSCAN" not in stages, stages
    assert "SORT" not in stages, stages


# ----------------------------------------------------------------------------- the waiting elements

WAITING_VARIANTS = [
    (status, recorded, platform, canonical_only)
    for recorded in (False, True)
    for status, platform in (("pending", None), ("error", None), ("unsupported", None), ("unsupported", "github"))
    for canonical_only in (True, False)
]
"""Every shape of query behind `waiting_elements`: a range of never-recorded or recorded elements, of
one status or of `unsupported` narrowed to a platform, with or without the canonical filter."""
MONGO_WAITING_INDEX = {
    (False, False): "idx_token_urls_never", (False, True): "idx_token_urls_platform_never",
    (True, False): "idx_token_urls_due", (True, True): "idx_token_urls_platform_due",
}
"""(recorded, narrowed to a platform) -> the index that range reads."""


def _index_serving(query: Any) -> str:
    """The name of the index of `INDEXES` whose keys are the query's equality terms (any order), then
    its sort (which starts with its range term): the index a server reads the range from in the
    sort's order, stopping at the limit. Other terms (`platform != None`) filter what it reads."""
    from social_recording.store.mongo.schema import INDEXES, TOKEN_URLS

    equal = {field for field, value in query.filter.items() if not isinstance(value, dict)}
    ranged = [field for field, value in query.filter.items()
              if isinstance(value, dict) and {"$gt", "$gte", "$lt", "$lte"} & set(value)]
    assert ranged == [query.sort[0][0]], (query.filter, query.sort)
    for name, keys, _unique in INDEXES[TOKEN_URLS]:
        if {k for k, _ in keys[: len(equal)]} == equal and keys[len(equal):] == list(query.sort):
            return name
    raise AssertionError(f"no index serves {query.filter} sorted by {query.sort}")


@pytest.mark.parametrize(("status", "recorded", "platform", "canonical_only"), WAITING_VARIANTS)
def test_mongo_waiting_queries_have_an_index_in_their_order(
    status: str, recorded: bool, platform: str | None, canonical_only: bool
) -> None:
    """Without a server (FerretDB plans no secondary index, mongomock none at all): each waiting
    query's equality terms and sort are exactly an index's keys, so MongoDB can read the range in
    order and stop at the limit, with no sort stage."""
    from social_recording.store.mongo.queries import q_waiting

    query = q_waiting(status, T1, 5, recorded, platform, canonical_only)
    assert query.limit == 5
    assert _index_serving(query) == MONGO_WAITING_INDEX[(recorded, platform is not None)]


def _ixscans(node: Any) -> Iterator[tuple[str, str]]:
    """(stage, indexName) of every stage of a MongoDB plan."""
    if isinstance(node, dict):
        if isinstance(node.get("stage"), str):
            yield node["stage"], str(node.get("indexName", ""))
        for value in node.values():
            yield from _ixscans(value)
    elif isinstance(node, list):
        for item in node:
            yield from _ixscans(item)


@pytest.mark.ferretdb_differs(NO_SECONDARY_INDEX_IN_PLANS)
@pytest.mark.parametrize(("status", "recorded", "platform", "canonical_only"), WAITING_VARIANTS)
def test_mongo_waiting_queries_read_their_index_in_order(
    real_mongo_store: MongoStore, status: str, recorded: bool, platform: str | None, canonical_only: bool
) -> None:
    """On MongoDB (`make test-mongo`): the winning plan of each waiting query scans the intended index
    and sorts nothing, so its limit stops the read however many elements wait."""
    from social_recording.store.mongo.queries import q_waiting

    _fill(real_mongo_store)
    query = q_waiting(status, T1, 5, recorded, platform, canonical_only)
    planner = real_mongo_store._find(query).explain().get("queryPlanner", {})
    stages = list(_ixscans(planner.get("winningPlan", {})))
    assert ("IXSCAN", MONGO_WAITING_INDEX[(recorded, platform is not None)]) in stages, stages
    assert not any(stage in ("SORT", "COLLSCAN") for stage, _ in stages), stages
