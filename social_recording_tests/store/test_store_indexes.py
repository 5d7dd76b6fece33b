"""Every hot-path query rides an index (DESIGN §2, seed 004 §1.4): SQLite's EXPLAIN QUERY PLAN on
the very SQL the store runs, and MongoDB's winning plan on a real server."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenLink, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import MongoStore, SqliteStore
from social_recording.store.sqlite import QUERIES
from social_recording_tests.store.conftest import MONGO_URL_ENV

T0 = datetime(2025, 3, 1, tzinfo=UTC)
INDEXED = re.compile(r"\bUSING (COVERING INDEX|INDEX|PRIMARY KEY|INTEGER PRIMARY KEY)\b")
FULL_SCAN = re.compile(r"^SCAN\b")


def _fill(store: Any) -> str:
    """A little data, so the planner sees real tables; returns an object id."""
    for i in range(30):
        urls = [f"https://x.com/u{i}", f"https://t.me/g{i % 5}"]
        store.create_pending_token(TokenProfile(address=f"M{i:03d}", urls=urls), now=T0)
        store.record_url_result(f"M{i:03d}", urls[0], FetchStatus.OK if i % 2 else FetchStatus.ERROR, T0)
    oid: str = store.upsert_object(
        ObjectKind.CONTENT, SocialObject(platform=Platform.X, platform_key="tweet:1", subtype="tweet"), now=T0
    )
    store.record_first_metrics(ObjectKind.CONTENT, oid, {"likes": 1.0}, T0)
    store.append_links(
        [
            TokenLink(
                token_address="M001",
                object=ObjectKind.CONTENT,
                object_id=oid,
                entry_url="https://x.com/u1",
                platform="x",
                subtype="tweet",
                link_depth=0,
                created_at=T0,
            )
        ]
    )
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


SQLITE_CASES: dict[str, tuple[tuple[Any, ...], str]] = {
    "token_by_address": (("M001",), "sqlite_autoindex_tokens_1"),
    "tokens_by_addresses": ((["M001", "M002"],), "sqlite_autoindex_tokens_1"),
    "urls_by_address": (("M001",), "sqlite_autoindex_token_urls_1"),
    "urls_by_addresses": ((["M001", "M002"],), "sqlite_autoindex_token_urls_1"),
    "existing_addresses": ((["M001", "M002", "Z"],), "sqlite_autoindex_tokens_1"),
    "addresses_by_url_statuses": (
        (["error", "pending", "unsupported", "skipped_paid"], None, 50),
        "idx_token_urls_status",
    ),
    "addresses_by_social_urls": ((["https://x.com/u1", "https://t.me/g1"],), "idx_token_urls_url"),
    "update_url_element": (
        ("M001", "https://x.com/u1", "ok", "2025-03-01T00:00:00.000000+00:00"),
        "sqlite_autoindex_token_urls_1",
    ),
    "object_id_by_platform_key": (("content", "tweet:1"), "sqlite_autoindex_contents_1"),
    "object_by_id": (("content", 1), "INTEGER PRIMARY KEY"),
    "metrics_of_object": (("content", "1"), "PRIMARY KEY"),
    "links_by_token_entry": (("M001", "https://x.com/u1"), "idx_links_token_linked"),
    "delete_links": (("M001", "https://x.com/u1"), "idx_links_token_linked"),
}


def test_every_named_query_is_covered() -> None:
    assert set(SQLITE_CASES) == set(QUERIES)


@pytest.mark.parametrize("name", sorted(SQLITE_CASES))
def test_sqlite_hot_query_uses_an_index(sqlite_store: SqliteStore, name: str) -> None:
    _fill(sqlite_store)
    params, expect = SQLITE_CASES[name]
    assert_indexed(sqlite_store.explain(name, *params), expect)


def test_sqlite_status_query_among_addresses_uses_an_index(sqlite_store: SqliteStore) -> None:
    _fill(sqlite_store)
    plan = sqlite_store.explain("addresses_by_url_statuses", ["error", "pending"], ["M001", "M003"], 10)
    assert_indexed(plan, "USING")


def test_sqlite_every_statement_the_hot_methods_run_uses_an_index(sqlite_store: SqliteStore) -> None:
    """Trace what the store really executes (bound values inlined), then plan each statement."""
    oid = _fill(sqlite_store)
    conn = sqlite_store._conn()  # this thread's connection: the one the calls below use
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        sqlite_store.find_token("M001")
        sqlite_store.find_existing_addresses(["M001", "M002", "nope"])
        sqlite_store.find_tokens_by_url_statuses([FetchStatus.ERROR, FetchStatus.PENDING], limit=5)
        sqlite_store.find_tokens_by_url_statuses([FetchStatus.ERROR], addresses=["M002", "M004"])
        sqlite_store.find_tokens_by_social_urls(["https://t.me/g1"])
        sqlite_store.record_url_result("M001", "https://t.me/g1", FetchStatus.NOT_FOUND, T0)
        sqlite_store.upsert_object(
            ObjectKind.CONTENT, SocialObject(platform=Platform.X, platform_key="tweet:1", subtype="tweet")
        )
        sqlite_store.get_object(ObjectKind.CONTENT, oid)
        sqlite_store.find_metrics(ObjectKind.CONTENT, oid)
        sqlite_store.find_links("M001", "https://x.com/u1")
        sqlite_store.delete_links("M001", "https://x.com/u1")
    finally:
        conn.set_trace_callback(None)
    reads = [s for s in seen if re.match(r"\s*(SELECT|UPDATE|DELETE)\b", s, re.I)]
    assert len(reads) >= 14, seen
    for sql in reads:
        plan = [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
        assert any(INDEXED.search(line) for line in plan), (sql, plan)
        assert not any(FULL_SCAN.match(line) for line in plan), (sql, plan)


def test_sqlite_explain_rejects_an_unknown_query(sqlite_store: SqliteStore) -> None:
    with pytest.raises(ValueError, match="no_such_query"):
        sqlite_store.explain("no_such_query")


# ----------------------------------------------------------------------------- real MongoDB


@pytest.fixture()
def real_mongo_store() -> Iterator[MongoStore]:
    base = os.environ[MONGO_URL_ENV]  # only collected when set (store/conftest.py)
    client: Any = MongoClient(base, tz_aware=True, serverSelectionTimeoutMS=10_000)
    db_name = f"sr_test_{uuid.uuid4().hex[:16]}"
    try:
        yield MongoStore(client, db_name)
    finally:
        client.drop_database(db_name)
        client.close()


MONGO_CASES: dict[str, tuple[Any, ...]] = {
    "token_by_address": ("M001",),
    "existing_addresses": (["M001", "M002", "Z"],),
    "tokens_by_url_statuses": (["error", "pending", "unsupported", "skipped_paid"], None, 50),
    "tokens_by_social_urls": (["https://x.com/u1", "https://t.me/g1"],),
    "object_id_by_platform_key": ("content", "tweet:1"),
    "metrics_of_object": ("content", "0123456789abcdef01234567"),
    "links_by_token_entry": ("M001", "https://x.com/u1"),
}


def test_mongo_cases_cover_every_named_query() -> None:
    from social_recording.store.mongo import QUERIES as MONGO_QUERIES

    assert set(MONGO_CASES) == set(MONGO_QUERIES)


@pytest.mark.parametrize("name", sorted(MONGO_CASES))
def test_mongo_hot_query_uses_an_index(real_mongo_store: MongoStore, name: str) -> None:
    _fill(real_mongo_store)
    stages = real_mongo_store.explain(name, *MONGO_CASES[name])
    assert "IXSCAN" in stages or "IDHACK" in stages or "EXPRESS_IXSCAN" in stages, stages
    assert "COLLSCAN" not in stages, stages
