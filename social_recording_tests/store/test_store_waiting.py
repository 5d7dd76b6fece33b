"""`waiting_elements` and `count_metrics` on every backend: how long elements have waited (since their
last recording, or their creation when never recorded), with the retry selection's narrowing of
`unsupported`, a bounded count, and SQLite's plans for the statements behind them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenProfile
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import SqliteStore, Store
from social_recording.store.base import CandidateQuery, ElementWrite, UrlWrite

# Millisecond-precise instants: BSON keeps milliseconds.
T0 = datetime(2025, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
HOUR = timedelta(hours=1)

X1 = "https://x.com/i/status/1"
GH = "https://github.com/org/repo"
DISCORD = "https://discord.com/invite/abc"
YT = "https://youtube.com/watch?v=abcdefghijk"



def _write(store: Store, address: str, url: str, status: FetchStatus, at: datetime, *,
           cause: Cause | None = None, detail: str | None = None, attempts: int = 1) -> None:
    element = store.find_element(address, url)
    assert element is not None
    written = store.apply_url_write(UrlWrite(
        address=address, url=url, platform=url.split("/")[2].split(".")[0], fence=element.fence + 1, now=at,
        element=ElementWrite(status, attempts, at if cause is None else None, at, cause, detail,
                             due_at=at + DEFAULT_MIN_INTERVAL),
    ))
    assert written.result.applied, written


def _query(statuses: set[FetchStatus], before: datetime, limit: int = 10,
           unsupported: frozenset[str] | None = None) -> CandidateQuery:
    """Elements that waited since `before`: due one base interval later (as `_write` dates them)."""
    return CandidateQuery(frozenset(statuses), before + DEFAULT_MIN_INTERVAL, limit, None, unsupported)


def test_never_recorded_elements_wait_since_their_creation(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="Old", urls=[X1, GH]), now=T0)
    store.create_pending_token(TokenProfile(address="New", urls=[X1]), now=T0 + 3 * HOUR)

    found = store.waiting_elements(_query({FetchStatus.PENDING}, T0 + 2 * HOUR))

    assert (found.count, found.capped) == (2, False)
    assert [(e.address, e.url, e.since, e.recorded) for e in found.oldest] == [
        ("Old", GH, T0, False), ("Old", X1, T0, False)]
    # select_candidates would take every never-recorded element at once; here the newer one has not waited.
    assert store.waiting_elements(_query({FetchStatus.PENDING}, T0 - HOUR)).count == 0


def test_recorded_elements_wait_since_their_last_recording(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="A", urls=[X1, GH, YT]), now=T0)
    _write(store, "A", X1, FetchStatus.ERROR, T0 + HOUR, detail="HTTP 503")
    _write(store, "A", GH, FetchStatus.ERROR, T0 + 5 * HOUR)
    _write(store, "A", YT, FetchStatus.OK, T0 + HOUR)

    found = store.waiting_elements(_query({FetchStatus.ERROR}, T0 + 2 * HOUR))

    assert found.count == 1
    (only,) = found.oldest
    assert (only.url, only.status, only.since, only.recorded, only.detail, only.attempts) == (
        X1, FetchStatus.ERROR, T0 + HOUR, True, "HTTP 503", 1)
    assert only.platform == "x"



def test_equal_times_make_the_limit_the_same_whatever_the_storage_order(store: Store) -> None:
    """Regression (a backup restored into Mongo listed other elements than the original): many elements
    waiting since the same instant, created and recorded in reverse order of address, and a limit
    that cuts through them. The oldest listed are the first by (since, address, url), as a store
    restored in another insertion order lists them too."""
    addresses = [f"T{i:02d}" for i in range(12)]
    for address in reversed(addresses):
        store.create_pending_token(TokenProfile(address=address, urls=[X1, GH]), now=T0)
    for address in reversed(addresses):
        _write(store, address, X1, FetchStatus.ERROR, T0 + HOUR)

    never = store.waiting_elements(_query({FetchStatus.PENDING}, T0 + 2 * HOUR, limit=5))
    recorded = store.waiting_elements(_query({FetchStatus.ERROR}, T0 + 2 * HOUR, limit=5))

    assert (never.count, recorded.count) == (12, 12)
    assert [(e.address, e.url) for e in never.oldest] == [(a, GH) for a in addresses[:5]]
    assert [(e.address, e.url) for e in recorded.oldest] == [(a, X1) for a in addresses[:5]]

def test_unsupported_is_narrowed_like_the_retry_selection(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="A", urls=[DISCORD, YT, GH]), now=T0)
    _write(store, "A", DISCORD, FetchStatus.UNSUPPORTED, T0, cause=Cause.NO_GENERATOR)
    _write(store, "A", YT, FetchStatus.UNSUPPORTED, T0, cause=Cause.NO_GENERATOR, detail="YOUTUBE_API_KEY is not set")
    _write(store, "A", GH, FetchStatus.UNSUPPORTED, T0, cause=Cause.UNPARSEABLE)

    narrowed = store.waiting_elements(
        _query({FetchStatus.UNSUPPORTED}, T0 + HOUR, unsupported=frozenset({"youtube", "github"})))
    assert [e.url for e in narrowed.oldest] == [YT] and narrowed.count == 1
    assert narrowed.oldest[0].cause is Cause.NO_GENERATOR

    everything = store.waiting_elements(_query({FetchStatus.UNSUPPORTED}, T0 + HOUR))
    assert everything.count == 3


def test_the_count_stops_at_its_bound_and_the_examples_at_the_limit(store: Store) -> None:
    for i in range(6):
        store.create_pending_token(TokenProfile(address=f"T{i}", urls=[X1]), now=T0 + timedelta(minutes=i))

    found = store.waiting_elements(_query({FetchStatus.PENDING}, T0 + HOUR, limit=2), count_bound=4)

    assert (found.count, found.capped) == (4, True)
    assert [e.address for e in found.oldest] == ["T0", "T1"]
    exact = store.waiting_elements(_query({FetchStatus.PENDING}, T0 + HOUR, limit=2), count_bound=6)
    assert (exact.count, exact.capped) == (6, True)
    assert store.waiting_elements(_query({FetchStatus.PENDING}, T0 + HOUR), count_bound=7).capped is False


def test_canonical_only_leaves_out_non_canonical_urls(store: Store) -> None:
    # A stored URL no platform claims (our own bug upstream): the retry selection leaves it alone, the
    # stuck-element check must still see it.
    store.create_pending_token(TokenProfile(address="A", urls=["not a url at all"]), now=T0)

    assert store.waiting_elements(_query({FetchStatus.PENDING}, T0 + HOUR)).count == 0
    seen = store.waiting_elements(_query({FetchStatus.PENDING}, T0 + HOUR), canonical_only=False)
    assert seen.count == 1 and seen.oldest[0].platform is None


def test_addresses_and_a_bad_bound_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="every token"):
        store.waiting_elements(CandidateQuery(frozenset({FetchStatus.PENDING}), T0, 5, ("A",)))
    with pytest.raises(ValueError, match="count_bound"):
        store.waiting_elements(_query({FetchStatus.PENDING}, T0), count_bound=0)


def test_count_metrics(store: Store) -> None:
    assert store.count_metrics() == 0
    oid = store.upsert_object(ObjectKind.CONTENT, SocialObject(platform=Platform.X, platform_key="tweet:1",
                                                               subtype="tweet"), now=T0)
    store.record_first_metrics(ObjectKind.CONTENT, oid, {"likes": 1.0, "views": 10.0}, T0)
    store.record_first_metrics(ObjectKind.CONTENT, oid, {"likes": 2.0}, T0 + HOUR)  # the first point stays
    assert store.count_metrics() == 2


WAITING_INDEX = {
    (False, False): "idx_token_urls_never", (False, True): "idx_token_urls_platform_never",
    (True, False): "idx_token_urls_due", (True, True): "idx_token_urls_platform_due",
}
"""The index each waiting range reads: (recorded, narrowed to a platform) -> index."""
TEMP_SORT = "USE TEMP B-TREE"


def _plans_store(tmp_path: Path) -> SqliteStore:
    store = SqliteStore(tmp_path / "plans.db")
    for i in range(30):
        store.create_pending_token(TokenProfile(address=f"M{i:03d}", urls=[X1, YT]), now=T0)
    _write(store, "M001", YT, FetchStatus.UNSUPPORTED, T0, cause=Cause.NO_GENERATOR)
    _write(store, "M002", X1, FetchStatus.ERROR, T0)
    return store


@pytest.mark.parametrize("recorded", [True, False])
@pytest.mark.parametrize("platform", [None, "youtube"])
@pytest.mark.parametrize("canonical_only", [True, False])
def test_sqlite_waiting_statements_read_their_index_in_order(
    tmp_path: Path, recorded: bool, platform: str | None, canonical_only: bool
) -> None:
    """Every statement behind `waiting_elements` is one range of its index, in the index's order, and
    stops at its limit or bound: a listing searches the index with no sort of the range (the fair
    order is the index's, ties included), a count reads the index alone. That is what keeps the
    report stage flat in the store's size (bench/p8_health.py measures it)."""
    store = _plans_store(tmp_path)
    try:
        index = WAITING_INDEX[(recorded, platform is not None)]
        for status in (["unsupported"] if platform else ["pending", "error", "unsupported"]):
            listing = store.explain("waiting", status, "2025-03-02", 5, recorded, platform, canonical_only)
            count = store.explain("count_waiting", status, "2025-03-02", 10, recorded, platform, canonical_only)
            assert any(line.startswith(f"SEARCH token_urls USING INDEX {index} (") for line in listing), listing
            assert any(line.startswith(f"SEARCH token_urls USING COVERING INDEX {index} (") for line in count), count
            for plan in (listing, count):
                assert not any(TEMP_SORT in line for line in plan), plan
                assert not any(line.startswith("SCAN token_urls") for line in plan), plan
    finally:
        store.close()


def test_sqlite_every_statement_waiting_elements_runs_reads_an_index_in_order(tmp_path: Path) -> None:
    """The statements the store really executes for the two health checks' queries (traced, bound
    values inlined), planned one by one: each searches an index, none sorts or scans the table."""
    store = _plans_store(tmp_path)
    conn = store._conn()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        every = frozenset(FetchStatus) - {FetchStatus.OK}
        store.waiting_elements(_query({FetchStatus.PENDING}, T0 + HOUR, limit=5), canonical_only=False)
        store.waiting_elements(_query(set(every), T0 + HOUR, limit=5))
        store.waiting_elements(_query(set(every), T0 + HOUR, limit=5, unsupported=frozenset({"youtube", "x"})))
    finally:
        conn.set_trace_callback(None)
    statements = [s for s in seen if s.lstrip().upper().startswith("SELECT")]
    assert len(statements) >= 20, seen
    for sql in statements:
        plan = [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
        assert any(line.startswith("SEARCH token_urls USING ") and "INDEX idx_token_urls_" in line
                   for line in plan), (sql, plan)
        assert not any(TEMP_SORT in line for line in plan), (sql, plan)
        assert not any(line.startswith("SCAN token_urls") for line in plan), (sql, plan)
    store.close()
