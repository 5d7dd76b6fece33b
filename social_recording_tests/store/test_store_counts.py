"""The health figures' counters on every backend: kept by the writes themselves (creates, recordings,
status changes, objects, first metrics, link replacement and copy), equal to a full recount after
any mix of writes, and repaired, with the drift reported, by the reconciliation."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import TokenProfile
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store import MongoStore, SqliteStore, Store
from social_recording.store.counts import METRICS_KEY, StoreCounts, object_key, url_key
from social_recording.store.mongo import COUNTS_DOC, STORE_COUNTS
from social_recording_tests.store._seed import planned, record_call, record_no_call
from social_recording_tests.store.conftest import Backend

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
X1 = "https://x.com/i/status/1"
X2 = "https://x.com/i/status/2"
TG = "https://t.me/coin"
GH = "https://github.com/coin/repo"


def _seed(store: Store) -> None:
    """Two tokens sharing X1; a graph recorded, the same answer copied, failures, a resolved value."""
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[X1, TG, GH]), now=T0)
    assert store.create_pending_token(TokenProfile(address="B", symbol="B", urls=[X1, X2]), now=T0)
    assert not store.create_pending_token(TokenProfile(address="A", symbol="again", urls=[X2]), now=T0)
    links = [planned("tweet:1"), planned("user:1", ObjectKind.ACCOUNT), planned("tweet:0", depth=1)]
    assert record_call(store, "A", X1, FetchStatus.OK, T0, links=links).result.applied
    assert record_call(store, "A", X1, FetchStatus.ERROR, T0).result.value == "ok_kept"  # ok never replaced
    assert record_no_call(store, "B", X1, FetchStatus.OK, T0, copy_links_from="A").result.applied
    assert record_call(store, "A", TG, FetchStatus.ERROR, T0).result.applied
    assert record_call(store, "A", TG, FetchStatus.NOT_FOUND, T0 + timedelta(hours=2)).result.applied
    assert record_no_call(store, "A", GH, FetchStatus.UNSUPPORTED, T0, cause=Cause.NO_GENERATOR).result.applied
    # The same graph again (a replay): objects and first metrics are kept, links replaced, not doubled.
    assert record_call(store, "B", X2, FetchStatus.OK, T0, links=[planned("tweet:1")]).result.applied
    assert store.add_resolved_url("B", "website", "https://coin.example", 1, T0).applied


EXPECTED = StoreCounts(
    by_platform={("x", FetchStatus.OK): 3, ("telegram", FetchStatus.NOT_FOUND): 1,
                 ("github", FetchStatus.UNSUPPORTED): 1, ("web", FetchStatus.PENDING): 1},
    tokens=2,
    objects={ObjectKind.CONTENT: 2, ObjectKind.ACCOUNT: 1, ObjectKind.VENUE: 0},
    metrics=3,
    links=7,
)


def test_the_counters_follow_every_write(store: Store) -> None:
    assert store.counts() == StoreCounts(objects={kind: 0 for kind in ObjectKind})
    _seed(store)
    assert store.counts() == EXPECTED
    assert store.status_counts().by_platform == EXPECTED.by_platform and store.status_counts().tokens == 2
    assert [store.count_objects(k) for k in ObjectKind] == [2, 1, 0]
    assert (store.count_metrics(), store.count_links()) == (3, 7)
    drift = store.reconcile_counts()
    assert drift.differences == {} and drift.unrepaired == frozenset()


def _tamper(backend: Backend, key: str, by: int) -> None:
    """A counter moved by hand (what a write outside the store, or a crash between a Mongo write and its
    counter, leaves behind)."""
    store = backend.store
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            assert conn.execute("UPDATE store_counts SET n = n + ? WHERE key = ?", [by, key]).rowcount == 1
        conn.close()
    else:
        assert isinstance(store, MongoStore)
        assert store.db[STORE_COUNTS].update_one({"_id": COUNTS_DOC}, {"$inc": {f"n.{key}": by}}).matched_count == 1


def test_the_reconciliation_reports_and_repairs_drift(backend: Backend) -> None:
    store = backend.store
    _seed(store)
    _tamper(backend, url_key("x", FetchStatus.OK.value), 5)
    _tamper(backend, object_key(ObjectKind.CONTENT), -2)
    _tamper(backend, METRICS_KEY, 1)
    assert store.counts().by_platform[("x", FetchStatus.OK)] == 8 and store.count_objects(ObjectKind.CONTENT) == 0

    drift = store.reconcile_counts()
    assert drift.differences == {
        url_key("x", "ok"): (8, 3), object_key(ObjectKind.CONTENT): (0, 2), METRICS_KEY: (4, 3),
    }
    assert drift.unrepaired == frozenset() and drift.repaired == drift.differences
    assert store.counts() == EXPECTED
    assert store.reconcile_counts().differences == {}


def test_a_missing_counter_is_recounted_too(backend: Backend) -> None:
    """A counter lost entirely (a key never bumped, or deleted) comes back from the recount."""
    store = backend.store
    _seed(store)
    key = url_key("github", FetchStatus.UNSUPPORTED.value)
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            conn.execute("DELETE FROM store_counts WHERE key = ?", [key])
        conn.close()
    else:
        assert isinstance(store, MongoStore)
        store.db[STORE_COUNTS].update_one({"_id": COUNTS_DOC}, {"$unset": {f"n.{key}": ""}})
    assert ("github", FetchStatus.UNSUPPORTED) not in store.counts().by_platform
    assert store.reconcile_counts().differences == {key: (0, 1)}
    assert store.counts() == EXPECTED
