"""What only a server over the wire shows (mongomock hides it): datetimes as the driver decodes them,
64-bit integers in BSON, the indexes a server really has after the store opened a database (empty,
old, or made by someone else), a duplicate-key race answered by the server, a server that is not
there at all, and one that takes a request and never answers (its own process, stopped). Each runs
against the session's Mongo-protocol server (FerretDB, or a real MongoDB).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo import MongoClient, monitoring
from pymongo.errors import DuplicateKeyError

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import PaidRequest, TokenProfile, UnresolvedValue, utcnow
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.recording.store_retry import write_through_outages
from social_recording.store import (
    OPEN_TIMEOUT_S,
    CandidateQuery,
    MongoStore,
    StoreUnavailableError,
    WriteResult,
    open_store,
)
from social_recording.store.mongo import INDEXES, IndexConflictError
from social_recording.store.mongo.connection import SOCKET_TIMEOUT_S
from social_recording_tests.store._seed import planned, record_call, url_write
from social_recording_tests.store.test_store_migrations import OLD_TOKENS, make_v1_mongo
from test_support.ferretdb_server import running_ferretdb
from test_support.mongo_server import MongoServer, PrefixedClient, mongo_url_with_db
from test_support.redis_server import free_port

pytestmark = pytest.mark.mongo_server

T0 = datetime(2025, 3, 1, 12, 0, 0, 250000, tzinfo=UTC)
U = "https://x.com/i/status/1"


@pytest.fixture()
def client(mongo_server: MongoServer) -> Iterator[PrefixedClient]:
    with mongo_server.prefixed_client() as prefixed:
        yield prefixed


def _indexes(db: Any, coll: str) -> dict[str, tuple[list[tuple[str, int]], bool]]:
    return {
        name: ([(k, int(d)) for k, d in info["key"]], bool(info.get("unique", False)))
        for name, info in db[coll].index_information().items()
    }


def _assert_intended_indexes(db: Any) -> None:
    for coll, wanted in INDEXES.items():
        found = _indexes(db, coll)
        for name, keys, unique in wanted:
            assert found.get(name) == (keys, unique) or (keys, unique) in found.values(), (coll, name, found)


# ----------------------------------------------------------------------------- datetimes


def test_every_datetime_comes_back_tz_aware_even_from_a_naive_client(mongo_server: MongoServer) -> None:
    """pymongo decodes BSON dates as naive datetimes unless told otherwise; the store reads them tz-aware
    (nested ones in an object's fields too), so a comparison with now() never mixes the two."""
    naive_client: MongoClient[dict[str, Any]] = MongoClient(mongo_server.url)  # tz_aware=False
    assert naive_client.codec_options.tz_aware is False
    try:
        with mongo_server.scratch_db() as db_name:
            store = MongoStore(naive_client, db_name)
            raw = UnresolvedValue(field="website", value="https://bit.ly/x", reason="timeout", checked_at=T0)
            store.create_pending_token(TokenProfile(address="M", first_transfer_at=T0, urls=[U], unresolved=(raw,)),
                                       now=T0)
            record_call(store, "M", U, FetchStatus.OK, T0, links=[planned("tweet:1", published_at=T0)])
            store.save_paid_request("https://tiktok.com/@a/video/1", "tiktok", 10**6,
                                    PaidRequest(provider="apify", request_id="r", submitted_at=T0))
            doc = store.find_token("M")
            state = store.find_url_state(U)
            paid = store.find_url_state("https://tiktok.com/@a/video/1")
            (link,) = store.find_links("M", U)
            obj = store.get_object(link.object, link.object_id)
            (unresolved,) = store.select_unresolved(T0 + timedelta(days=1), 5)
            (waiting,) = store.waiting_elements(
                CandidateQuery(frozenset({FetchStatus.PENDING}), T0 + timedelta(days=1), 5)).oldest or [None]
            assert doc is not None and state is not None and paid is not None and paid.request is not None
            assert obj is not None
            values = [doc.first_transfer_at, doc.created_at, doc.updated_at, doc.unresolved[0].checked_at,
                      doc.social_urls[0].attempted_at, doc.social_urls[0].checked_at, state.attempted_at,
                      state.updated_at, paid.request.submitted_at, link.created_at, obj["created_at"],
                      obj["fields"]["published_at"], unresolved[1].checked_at]
            if waiting is not None:
                values.append(waiting.since)
            now = utcnow()
            for value in values:
                assert isinstance(value, datetime) and value.utcoffset() == timedelta(0), value
                assert value <= now  # a naive value here would raise TypeError
            assert obj["fields"]["published_at"] == T0.replace(microsecond=250000)
    finally:
        naive_client.close()


# ----------------------------------------------------------------------------- 64-bit integers


def test_64_bit_integers_and_large_metrics_round_trip(client: PrefixedClient) -> None:
    """BSON int64 both ways (a float or a 32-bit path would lose them), and fences past 2^31 (the Redis
    lock server's are floored at its clock in milliseconds) compare as numbers against stored int32s."""
    store = MongoStore(client, "ints")
    big = {"max": 2**63 - 1, "min": -(2**63), "past_float": 2**53 + 1, "id": 1_900_000_000_000_000_123}
    obj = SocialObject(platform=Platform.X, platform_key="tweet:big", subtype="tweet", fields=big,
                       metrics={"views": 1e18, "exact": float(2**53), "small": 0.1, "likes": 12_345_678_901.0})
    oid = store.upsert_object(ObjectKind.CONTENT, obj, now=T0)
    row = store.get_object(ObjectKind.CONTENT, oid)
    assert row is not None and row["fields"] == big
    assert all(isinstance(v, int) for v in row["fields"].values())  # bson.Int64 is an int
    store.record_first_metrics(ObjectKind.CONTENT, oid, obj.metrics, T0)
    assert store.find_metrics(ObjectKind.CONTENT, oid) == obj.metrics

    store.create_pending_token(TokenProfile(address="M", urls=[U]), now=T0)
    clock_fence = 1_764_590_000_000  # ms since the epoch: > 2^31
    assert store.apply_url_write(url_write("M", U, clock_fence, FetchStatus.ERROR, T0, attempts=2**40)).result is WriteResult.APPLIED
    el = store.find_element("M", U)
    assert el is not None and (el.fence, el.attempts) == (clock_fence, 2**40)
    stale = store.apply_url_write(url_write("M", U, 2**31 - 1, FetchStatus.NOT_FOUND, T0))
    assert (stale.result, stale.applied_fence) == (WriteResult.FENCED, clock_fence)
    assert store.apply_url_write(url_write("M", U, 2**62, FetchStatus.NOT_FOUND, T0)).result is WriteResult.APPLIED
    state = store.find_url_state(U)
    assert state is not None and state.fence == 2**62


# ----------------------------------------------------------------------------- indexes


def test_opening_an_empty_database_creates_every_index(client: PrefixedClient) -> None:
    store = MongoStore(client, "empty")
    _assert_intended_indexes(store.db)
    before = {coll: _indexes(store.db, coll) for coll in INDEXES}
    MongoStore(client, "empty")  # again: nothing changes
    assert {coll: _indexes(store.db, coll) for coll in INDEXES} == before
    store.create_pending_token(TokenProfile(address="M", urls=[]))
    with pytest.raises(DuplicateKeyError):  # the server enforces the uniqueness, not only lists it
        store.db["tokens"].insert_one({"address": "M"})


def test_opening_an_old_database_leaves_the_intended_indexes(client: PrefixedClient) -> None:
    make_v1_mongo(client, "old")
    store = MongoStore(client, "old")
    _assert_intended_indexes(store.db)
    names = set(store.db["tokens"].index_information())
    assert not any("social_url" in name for name in names)
    assert store.db["token_urls"].count_documents({}) == sum(len(e) for _a, _s, e in OLD_TOKENS)


def test_a_database_someone_else_indexed_keeps_their_indexes_and_gets_ours(client: PrefixedClient) -> None:
    """Equivalent indexes under other names serve as ours; unrelated ones are left alone; a non-unique
    index whose keys changed since an older release is rebuilt under its name."""
    db = client["theirs"]
    db["tokens"].create_index([("address", 1)], name="address_1", unique=True)
    db["contents"].create_index([("platform_key", 1)], name="by_key", unique=True)
    db["tokens"].create_index([("symbol", 1)], name="their_symbol_index")
    db["token_urls"].create_index([("status", 1), ("checked_at", 1)], name="idx_token_urls_due")
    store = MongoStore(client, "theirs")
    _assert_intended_indexes(store.db)
    tokens = _indexes(store.db, "tokens")
    assert tokens["address_1"] == ([("address", 1)], True) and "uniq_tokens_address" not in tokens
    assert tokens["their_symbol_index"] == ([("symbol", 1)], False)
    assert _indexes(store.db, "token_urls")["idx_token_urls_due"][0] == [
        ("status", 1), ("due_at", 1), ("address", 1), ("url", 1)]


@pytest.mark.parametrize("name", ["uniq_contents_platform_key", "platform_key_1"])
def test_a_database_whose_index_lacks_our_uniqueness_is_refused(client: PrefixedClient, name: str) -> None:
    """A non-unique index on platform_key, under our name or another: objects could be stored twice, so
    opening fails with an error naming the index (a server may refuse our create_index, or accept it
    and keep its own: either way the store checks what stands)."""
    client["weak"]["contents"].create_index([("platform_key", 1)], name=name)
    with pytest.raises(IndexConflictError, match=rf"'contents'.*'uniq_contents_platform_key'.*{name}"):
        MongoStore(client, "weak")


# ----------------------------------------------------------------------------- duplicate-key races


class _DuplicateKeyReplies(monitoring.CommandListener):
    """Counts the server's duplicate-key answers (code 11000), command errors and write errors alike."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        if any(e.get("code") == 11000 for e in event.reply.get("writeErrors") or []):
            with self._lock:
                self.count += 1

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        if getattr(event.failure, "get", None) and event.failure.get("code") == 11000:
            with self._lock:
                self.count += 1


def _race(store: MongoStore, keys: list[str], threads_n: int) -> dict[int, list[tuple[str, bool]]]:
    """`threads_n` threads, released at once, each create every key's object, first metric and token;
    returns {worker: [(object id, token created) per key]}."""
    results: dict[int, list[tuple[str, bool]]] = {}
    errors: list[BaseException] = []
    go = threading.Event()

    def work(worker: int) -> None:
        try:
            go.wait(30)
            out: list[tuple[str, bool]] = []
            for key in keys:
                obj = SocialObject(platform=Platform.YOUTUBE, platform_key=key, subtype="channel",
                                   fields={"writer": worker})
                oid = store.upsert_object(ObjectKind.ACCOUNT, obj, now=T0 + timedelta(seconds=worker))
                store.record_first_metrics(ObjectKind.ACCOUNT, oid, {"subs": float(worker)}, T0)
                created = store.create_pending_token(TokenProfile(address=key, symbol=str(worker), urls=[U]), now=T0)
                out.append((oid, created))
            results[worker] = out
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(threads_n)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert sorted(results) == list(range(threads_n))
    return results


def test_a_duplicate_key_race_returns_the_existing_document(mongo_server: MongoServer) -> None:
    """Threads race to create the same objects, tokens and first metrics through the server: each
    caller gets the one document that stands. FerretDB answers the loser of such a race with a
    duplicate-key error, which the store reads as "the other caller created it" (a MongoDB server
    retries such an upsert itself, so there the count may stay zero); rounds repeat until the server
    has answered with one (bounded)."""
    listener = _DuplicateKeyReplies()
    client: MongoClient[dict[str, Any]] = mongo_server.client(event_listeners=[listener], maxPoolSize=16)
    threads_n, keys_n = 8, 10
    try:
        with mongo_server.scratch_db() as db_name:
            store = MongoStore(client, db_name)
            for round_ in range(20):
                keys = [f"channel:race-{round_}-{i}" for i in range(keys_n)]
                results = _race(store, keys, threads_n)
                assert store.db["accounts"].count_documents({}) == (round_ + 1) * keys_n  # one row per key
                for i, key in enumerate(keys):
                    ids = {results[w][i][0] for w in range(threads_n)}
                    assert len(ids) == 1, (key, ids)
                    (oid,) = ids
                    row = store.get_object(ObjectKind.ACCOUNT, oid)
                    assert row is not None and row["platform_key"] == key
                    winner = row["fields"]["writer"]
                    assert row["created_at"] == T0 + timedelta(seconds=winner)  # one writer's whole row
                    assert len(store.find_metrics(ObjectKind.ACCOUNT, oid)) == 1
                    assert sum(results[w][i][1] for w in range(threads_n)) == 1  # one creator of the token
                    assert store.db["tokens"].count_documents({"address": key}) == 1
                if listener.count or not mongo_server.ferretdb:
                    break
            if mongo_server.ferretdb:
                assert listener.count > 0, "no duplicate-key answer in 20 rounds: the race was never met"
    finally:
        client.close()


# ----------------------------------------------------------------------------- unreachable


def test_an_unreachable_server_fails_the_open_fast_naming_the_url_without_its_password() -> None:
    port = free_port()  # nothing listens there
    url = f"mongodb://recorder:s3cr%40t-pw@127.0.0.1:{port}/social?authSource=admin"
    with pytest.raises(StoreUnavailableError) as info:
        open_store(url)
    message = str(info.value)
    assert f"mongodb://recorder:***@127.0.0.1:{port}/social" in message
    assert "s3cr" not in message and "%40t-pw" not in message
    assert "SOCIAL_RECORDING_STORE_URL" in message
    # The bound the open waited under (not pymongo's 30 s per operation), as it tells; not timed: a busy
    # machine takes longer. A shorter server selection timeout in the URL wins.
    assert f"waited at most {OPEN_TIMEOUT_S:g} s" in message
    with pytest.raises(StoreUnavailableError) as info:
        open_store(url + "&serverSelectionTimeoutMS=200")
    assert "waited at most 0.2 s" in str(info.value)


# ----------------------------------------------------------------------------- a server that stops answering


def test_every_request_has_a_bounded_wait_for_its_reply_unless_the_url_names_one(mongo_server: MongoServer) -> None:
    """pymongo waits forever for a reply by default; the store's client does not (SOCKET_TIMEOUT_S), and a
    `socketTimeoutMS` in the URL is the operator's to set."""
    with mongo_server.scratch_db() as db_name:
        for url, wanted in ((mongo_server.with_db(db_name), SOCKET_TIMEOUT_S),
                            (mongo_server.with_db(db_name) + "?socketTimeoutMS=1500", 1.5)):
            store = open_store(url)
            try:
                assert isinstance(store, MongoStore)
                assert store._client.options.pool_options.socket_timeout == wanted, url
            finally:
                store.close()


class _Retries(logging.Handler):
    """Sets `seen` at the first `store_write_retry` a write logs."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "store_write_retry" in record.getMessage():
            self.seen.set()


def test_a_write_to_a_server_that_stopped_answering_is_repeated_once_it_answers_not_waited_on_forever() -> None:
    """The store's own server process is stopped (SIGSTOP: its socket stays open and takes the request,
    no reply ever comes) while a write is sent. The request gives up after the URL's socket timeout, the
    write is repeated as transient (logged), and once the server is resumed (SIGCONT) the repeat lands:
    one token, no hang. Without the bound the write waits on its socket and the retry never shows."""
    retries = _Retries()
    recording_log = logging.getLogger("social_recording.recording")
    recording_log.addHandler(retries)
    with running_ferretdb() as ferret:
        store = open_store(mongo_url_with_db(ferret.url, "unanswered") + "?socketTimeoutMS=300")
        assert ferret.proc is not None
        outcome: list[object] = []

        def write() -> None:
            try:
                outcome.append(write_through_outages(
                    lambda: store.create_pending_token(TokenProfile(address="stalled")),
                    what="token", url=U, retry_s=120.0))
            except BaseException as exc:  # reported by the assertion below
                outcome.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        try:
            os.kill(ferret.proc.pid, signal.SIGSTOP)
            try:
                writer.start()
                assert retries.seen.wait(60.0), "the write still waits on a server that does not answer"
            finally:
                os.kill(ferret.proc.pid, signal.SIGCONT)
            writer.join(120.0)
            assert not writer.is_alive(), "the repeated write did not land after the server resumed"
            assert outcome == [True], outcome
            assert store.find_token("stalled") is not None
        finally:
            recording_log.removeHandler(retries)
            store.close()
