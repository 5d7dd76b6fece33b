"""MongoStore specifics the shared contract cannot reach: indexes ensured on open, the duplicate-key
branches a concurrent upsert takes on a real server, and the steps of a write that has no
multi-document transaction to hide behind."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import mongomock
import pytest
from bson import ObjectId
from pymongo.errors import DuplicateKeyError, OperationFailure

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import PaidRequest, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import MongoStore, WriteResult
from social_recording.store.mongo import NEVER, QUERIES, IndexConflictError
from social_recording_tests.store._mongo_shape import check_mongomock_writes
from social_recording_tests.store._seed import planned, url_write
from test_support.mongo_server import MongoServer

U = "https://x.com/i/status/1"
T1 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
T2 = T1 + timedelta(hours=1)


@pytest.fixture()
def mongo(monkeypatch: pytest.MonkeyPatch) -> MongoStore:
    """mongomock, for the tests that stage a race or a server's answer by patching it."""
    check_mongomock_writes(monkeypatch)  # what a real server refuses fails here too
    return MongoStore(mongomock.MongoClient(tz_aware=True), "sr_mongo_unit")


@pytest.fixture(params=["mongomock", pytest.param("mongo", marks=pytest.mark.mongo_server)])
def any_mongo(request: pytest.FixtureRequest) -> Iterator[MongoStore]:
    """mongomock and the session's server over the wire."""
    if request.param == "mongomock":
        yield request.getfixturevalue("mongo")
        return
    server: MongoServer = request.getfixturevalue("mongo_server")
    with server.prefixed_client() as client:
        yield MongoStore(client, "sr_mongo_unit")


def test_indexes_are_ensured_on_open(any_mongo: MongoStore) -> None:
    def keys(coll: str) -> dict[str, tuple[list[tuple[str, int]], bool]]:
        return {
            name: ([(k, int(d)) for k, d in info["key"]], bool(info.get("unique", False)))
            for name, info in any_mongo.db[coll].index_information().items()
        }

    tokens = keys("tokens")
    assert tokens["uniq_tokens_address"] == ([("address", 1)], True)
    assert tokens["idx_tokens_fingerprints"] == ([("fingerprints", 1)], False)
    assert tokens["idx_tokens_discovered"] == ([("created_at", -1)], False)
    assert tokens["idx_tokens_unresolved_due"] == ([("unresolved.checked_at", 1), ("address", 1)], False)
    assert not any("social_url" in name for name in tokens)  # elements are not embedded any more
    elements = keys("token_urls")
    assert elements["uniq_token_urls_address_url"] == ([("address", 1), ("url", 1)], True)
    assert elements["idx_token_urls_due"] == ([("status", 1), ("due_at", 1), ("address", 1), ("url", 1)], False)
    assert elements["idx_token_urls_platform_due"] == (
        [("status", 1), ("platform", 1), ("cause", 1), ("due_at", 1), ("address", 1), ("url", 1)],
        False,
    )
    never_order = [("created_at", 1), ("address", 1), ("url", 1)]
    assert elements["idx_token_urls_never"] == ([("status", 1), ("checked_at", 1), *never_order], False)
    assert elements["idx_token_urls_platform_never"] == (
        [("status", 1), ("platform", 1), ("cause", 1), ("checked_at", 1), *never_order], False)
    assert keys("url_states")["uniq_url_states_url"] == ([("url", 1)], True)
    assert keys("token_links")["idx_links_token_linked"] == ([("token_address", 1), ("created_at", 1)], False)
    assert keys("metrics")["uniq_metrics_object_metric"] == (
        [("object", 1), ("object_id", 1), ("metric", 1)],
        True,
    )
    for coll in ("contents", "accounts", "venues"):
        assert keys(coll)[f"uniq_{coll}_platform_key"] == ([("platform_key", 1)], True)
    MongoStore(any_mongo._client, "sr_mongo_unit")  # ensuring again on an existing database is harmless


def test_create_pending_reads_a_duplicate_key_race_as_already_existing(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def racing_update_one(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise DuplicateKeyError("E11000 duplicate key error collection: tokens index: uniq_tokens_address")

    monkeypatch.setattr(mongomock.Collection, "update_one", racing_update_one)
    assert mongo.create_pending_token(TokenProfile(address="M", urls=[])) is False


def test_upsert_object_returns_the_winners_id_after_a_duplicate_key_race(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    obj = SocialObject(platform=Platform.GITHUB, platform_key="repo:a/b", subtype="repo", fields={"n": 1})
    winner = mongo.upsert_object(ObjectKind.VENUE, obj)

    def racing_find_one_and_update(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise DuplicateKeyError(
            "E11000 duplicate key error collection: venues index: uniq_venues_platform_key"
        )

    monkeypatch.setattr(mongomock.Collection, "find_one_and_update", racing_find_one_and_update)
    assert mongo.upsert_object(ObjectKind.VENUE, obj.model_copy(update={"fields": {"n": 2}})) == winner
    monkeypatch.undo()
    row = mongo.get_object(ObjectKind.VENUE, winner)
    assert row is not None and row["fields"] == {"n": 1}


def test_object_references_are_stored_as_object_ids_for_joins(any_mongo: MongoStore) -> None:
    any_mongo.create_pending_token(TokenProfile(address="M", urls=[U]))
    out = any_mongo.apply_url_write(url_write("M", U, 1, FetchStatus.OK, T1, links=[planned("t")]))
    (link,) = out.links
    raw = any_mongo.db["token_links"].find_one({"token_address": "M"})
    assert raw is not None and isinstance(raw["object_id"], ObjectId)
    assert any_mongo.db["contents"].find_one({"_id": raw["object_id"]}) is not None
    assert any_mongo.find_links("M", U)[0].object_id == link.object_id


def test_every_named_query_runs(any_mongo: MongoStore) -> None:
    """The parameters the real-server explain test uses are valid for every named query."""
    from social_recording_tests.store.test_store_indexes import MONGO_CASES

    assert set(MONGO_CASES) == set(QUERIES)
    for name, params in MONGO_CASES.items():
        assert list(any_mongo._find(QUERIES[name](*params))) == [], name


def test_a_state_upsert_that_loses_an_insert_race_is_retried_not_refused(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two holders writing a URL's first state race to insert it: the loser's upsert fails with a
    duplicate key although its fence may be the larger one; it must then update, not give up."""
    mongo.create_pending_token(TokenProfile(address="M", urls=[U]))
    real = mongomock.Collection.find_one_and_update
    raced: list[bool] = []

    def find_one_and_update(self: Any, flt: Any, update: Any, *args: Any, upsert: bool = False,
                            **kwargs: Any) -> Any:
        if self.name == "url_states" and upsert and not raced:
            raced.append(True)  # an older holder (fence 3) inserts the state first
            self.update_one({"url": U}, {"$set": {"fence": 3, "status": "error", "attempts": 1}}, upsert=True)
            raise DuplicateKeyError("E11000 duplicate key error collection: url_states index: uniq_url_states_url")
        return real(self, flt, update, *args, upsert=upsert, **kwargs)

    monkeypatch.setattr(mongomock.Collection, "find_one_and_update", find_one_and_update)
    out = mongo.apply_url_write(url_write("M", U, 5, FetchStatus.NOT_FOUND, T1, attempts=2))
    assert raced and out.result is WriteResult.APPLIED
    state = mongo.find_url_state(U)
    assert state is not None and (state.status, state.fence, state.attempts) == (FetchStatus.NOT_FOUND, 5, 2)
    el = mongo.find_element("M", U)
    assert el is not None and (el.status, el.fence) == (FetchStatus.NOT_FOUND, 5)


def test_a_state_upsert_that_meets_a_newer_holder_reports_its_fence(
    mongo: MongoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    mongo.create_pending_token(TokenProfile(address="M", urls=[U]))
    real = mongomock.Collection.find_one_and_update

    def find_one_and_update(self: Any, flt: Any, update: Any, *args: Any, upsert: bool = False,
                            **kwargs: Any) -> Any:
        if self.name == "url_states" and upsert and mongo.db["url_states"].count_documents({}) == 0:
            # A newer holder (fence 9) writes the state between our check and our write.
            self.update_one({"url": U}, {"$set": {"fence": 9, "status": "ok", "attempts": 1}}, upsert=True)
        return real(self, flt, update, *args, upsert=upsert, **kwargs)

    monkeypatch.setattr(mongomock.Collection, "find_one_and_update", find_one_and_update)
    out = mongo.apply_url_write(url_write("M", U, 5, FetchStatus.ERROR, T1))
    assert (out.result, out.applied_fence) == (WriteResult.FENCED, 9)
    el = mongo.find_element("M", U)
    assert el is not None and el.status is FetchStatus.PENDING


def test_a_url_states_answer_time_is_kept_to_the_microsecond(any_mongo: MongoStore) -> None:
    """BSON dates keep milliseconds; the answer time's rest is kept beside it, because the failure
    streak orders a failed call against an answer given in the same millisecond. A state written
    before that field reads as its millisecond."""
    at = T1 + timedelta(microseconds=1_234)
    any_mongo.create_pending_token(TokenProfile(address="M", urls=[U]))
    assert any_mongo.apply_url_write(url_write("M", U, 1, FetchStatus.OK, at)).result is WriteResult.APPLIED
    state = any_mongo.find_url_state(U)
    assert state is not None and state.answered_at == at
    any_mongo.db["url_states"].update_one({"url": U}, {"$unset": {"answered_at_us": ""}})
    state = any_mongo.find_url_state(U)
    assert state is not None and state.answered_at == T1 + timedelta(milliseconds=1)


def test_save_paid_request_retries_a_lost_insert_race(mongo: MongoStore, monkeypatch: pytest.MonkeyPatch) -> None:
    real = mongomock.Collection.update_one
    raced: list[bool] = []

    def update_one(self: Any, flt: Any, update: Any, upsert: bool = False, **kwargs: Any) -> Any:
        if self.name == "url_states" and upsert and not raced:
            raced.append(True)
            real(self, {"url": U}, {"$set": {"fence": 3, "status": "pending", "attempts": 0}}, upsert=True)
            raise DuplicateKeyError("E11000 duplicate key error collection: url_states index: uniq_url_states_url")
        return real(self, flt, update, upsert=upsert, **kwargs)

    monkeypatch.setattr(mongomock.Collection, "update_one", update_one)
    req = PaidRequest(provider="apify", request_id="run-1", submitted_at=T1)
    assert mongo.save_paid_request(U, "x", 5, req) is WriteResult.APPLIED
    state = mongo.find_url_state(U)
    assert state is not None and (state.fence, state.request) == (5, req)


def test_an_overtaken_writer_never_shows_its_links_beside_the_newer_ones(any_mongo: MongoStore) -> None:
    """Links carry the fence that wrote them and readers see only the newest fence's: leftovers of
    a writer overtaken between its link insert and its cleanup stay invisible."""
    any_mongo.create_pending_token(TokenProfile(address="M", urls=[U]))
    any_mongo.apply_url_write(url_write("M", U, 7, FetchStatus.ERROR, T1, links=[planned("new:1"), planned("new:2")]))
    # What an overtaken fence-6 writer could leave behind if it stopped mid-way.
    any_mongo.db["token_links"].insert_one({
        "token_address": "M", "object": "content", "object_id": "stale", "entry_url": U, "platform": "x",
        "subtype": "tweet", "link_depth": 0, "created_at": T1, "fence": 6,
    })
    assert sorted(lk.object_id for lk in any_mongo.find_links("M", U)) == sorted(
        str(d["object_id"]) for d in any_mongo.db["token_links"].find({"fence": 7})
    )
    any_mongo.apply_url_write(url_write("M", U, 8, FetchStatus.ERROR, T2, links=[planned("new:3")]))
    assert any_mongo.db["token_links"].count_documents({"token_address": "M"}) == 1  # the next write cleans up


def test_a_crash_between_elements_and_token_is_completed_by_the_next_create(any_mongo: MongoStore) -> None:
    """Elements go in before the token document: a creator that stopped in between left elements
    without a token, which the next create completes (never a token that lost its URLs)."""
    any_mongo.db["token_urls"].insert_one({
        "address": "M", "url": U, "position": 0, "platform": "x", "status": "pending", "attempted_at": None,
        "attempts": 0, "checked_at": NEVER, "cause": None, "detail": None, "fence": 0, "created_at": T1,
    })
    assert any_mongo.find_token("M") is None
    assert any_mongo.create_pending_token(TokenProfile(address="M", urls=[U, "https://t.me/coin"]), now=T2) is True
    doc = any_mongo.find_token("M")
    assert doc is not None and [u.url for u in doc.social_urls] == [U, "https://t.me/coin"]
    assert any_mongo.db["token_urls"].count_documents({"address": "M"}) == 2


def _conflict_on(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make create_index behave like a real server when an index with the same keys but another
    name exists (code 85, IndexOptionsConflict), which mongomock does not emulate."""
    real = mongomock.Collection.create_index

    def create_index(self: Any, keys: Any, **kwargs: Any) -> Any:
        if kwargs.get("name") == name:
            raise OperationFailure("Index already exists with a different name", code=85)
        return real(self, keys, **kwargs)

    monkeypatch.setattr(mongomock.Collection, "create_index", create_index)


def test_an_equivalent_index_under_another_name_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    client: Any = mongomock.MongoClient(tz_aware=True)
    client["legacy"]["tokens"].create_index("address", name="address_1_legacy", unique=True)
    _conflict_on("uniq_tokens_address", monkeypatch)
    store = MongoStore(client, "legacy")
    assert store.create_pending_token(TokenProfile(address="M", urls=[])) is True


def test_a_weaker_index_under_another_name_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    client: Any = mongomock.MongoClient(tz_aware=True)
    client["legacy"]["contents"].create_index("platform_key", name="platform_key_1")  # not unique
    _conflict_on("uniq_contents_platform_key", monkeypatch)
    with pytest.raises(IndexConflictError, match=r"'contents'.*'uniq_contents_platform_key'.*platform_key_1"):
        MongoStore(client, "legacy")


def _refuse_renamed_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make create_index behave like a real server when an index of the same name exists with other
    keys (code 86, IndexKeySpecsConflict); mongomock raises without a code."""
    real = mongomock.Collection.create_index

    def create_index(self: Any, keys: Any, **kwargs: Any) -> Any:
        existing = self.index_information().get(kwargs.get("name"))
        if existing is not None and [(k, int(d)) for k, d in existing["key"]] != list(keys):
            raise OperationFailure("An existing index has the same name as the requested index", code=86)
        return real(self, keys, **kwargs)

    monkeypatch.setattr(mongomock.Collection, "create_index", create_index)


def test_an_index_whose_keys_changed_since_an_older_release_is_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Earlier releases built the retry and unresolved indexes without their tie-breaking keys under
    the same names; a server refuses to redefine a name, so opening such a database must rebuild them."""
    client: Any = mongomock.MongoClient(tz_aware=True)
    db = client["older"]
    db["token_urls"].create_index([("status", 1), ("checked_at", 1)], name="idx_token_urls_due")
    db["tokens"].create_index([("unresolved.checked_at", 1)], name="idx_tokens_unresolved_due")
    _refuse_renamed_keys(monkeypatch)
    store = MongoStore(client, "older")
    due = store.db["token_urls"].index_information()["idx_token_urls_due"]
    # (and version 6 moved it from the last recording to the stored due time)
    assert [(k, int(d)) for k, d in due["key"]] == [("status", 1), ("due_at", 1), ("address", 1), ("url", 1)]
    unresolved = store.db["tokens"].index_information()["idx_tokens_unresolved_due"]
    assert [(k, int(d)) for k, d in unresolved["key"]] == [("unresolved.checked_at", 1), ("address", 1)]
    MongoStore(client, "older")  # opening again is harmless


def test_a_unique_index_whose_keys_changed_is_an_error_not_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    client: Any = mongomock.MongoClient(tz_aware=True)
    client["older"]["token_urls"].create_index([("url", 1)], name="uniq_token_urls_address_url", unique=True)
    _refuse_renamed_keys(monkeypatch)
    with pytest.raises(IndexConflictError, match="uniq_token_urls_address_url"):
        MongoStore(client, "older")
    assert "uniq_token_urls_address_url" in client["older"]["token_urls"].index_information()
