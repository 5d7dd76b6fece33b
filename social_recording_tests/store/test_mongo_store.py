"""MongoStore specifics the shared contract cannot reach: indexes ensured on open, and the
duplicate-key branches a concurrent upsert takes on a real server."""

from __future__ import annotations

from typing import Any

import mongomock
import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenProfile
from social_recording.domain.urls import Platform
from social_recording.store import MongoStore


@pytest.fixture()
def mongo() -> MongoStore:
    return MongoStore(mongomock.MongoClient(tz_aware=True), "sr_mongo_unit")


def test_indexes_are_ensured_on_open(mongo: MongoStore) -> None:
    def keys(coll: str) -> dict[str, tuple[list[tuple[str, int]], bool]]:
        return {
            name: ([(k, int(d)) for k, d in info["key"]], bool(info.get("unique", False)))
            for name, info in mongo.db[coll].index_information().items()
        }

    tokens = keys("tokens")
    assert tokens["uniq_tokens_address"] == ([("address", 1)], True)
    assert tokens["idx_tokens_social_url_status"] == ([("social_urls.status", 1)], False)
    assert tokens["idx_tokens_social_url_url"] == ([("social_urls.url", 1)], False)
    assert tokens["idx_tokens_fingerprints"] == ([("fingerprints", 1)], False)
    assert tokens["idx_tokens_discovered"] == ([("created_at", -1)], False)
    assert keys("token_links")["idx_links_token_linked"] == ([("token_address", 1), ("created_at", 1)], False)
    assert keys("metrics")["uniq_metrics_object_metric"] == (
        [("object", 1), ("object_id", 1), ("metric", 1)],
        True,
    )
    for coll in ("contents", "accounts", "venues"):
        assert keys(coll)[f"uniq_{coll}_platform_key"] == ([("platform_key", 1)], True)
    MongoStore(mongo.db.client, "sr_mongo_unit")  # ensuring again on an existing database is harmless


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


def test_object_references_are_stored_as_object_ids_for_joins(mongo: MongoStore) -> None:
    from social_recording.domain.models import TokenLink

    oid = mongo.upsert_object(
        ObjectKind.CONTENT, SocialObject(platform=Platform.X, platform_key="t", subtype="tweet")
    )
    mongo.append_links(
        [
            TokenLink(
                token_address="M",
                object=ObjectKind.CONTENT,
                object_id=oid,
                entry_url="u",
                platform="x",
                subtype="tweet",
                link_depth=0,
            )
        ]
    )
    raw = mongo.db["token_links"].find_one({"token_address": "M"})
    assert raw is not None and mongo.db["contents"].find_one({"_id": raw["object_id"]}) is not None
    assert mongo.find_links("M", "u")[0].object_id == oid


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
    with pytest.raises(OperationFailure):
        MongoStore(client, "legacy")
