"""The write-shape check the mongomock backends run under: it must flag what a real server refuses
(mongomock applies all of it) and pass what the store really sends."""

from __future__ import annotations

from typing import Any

import mongomock
import pytest

from social_recording.store import MongoStore
from social_recording_tests.store._mongo_shape import (
    check_mongomock_writes,
    document_problems,
    update_problems,
)


@pytest.mark.parametrize(
    ("flt", "update", "upsert", "expect"),
    [
        ({"url": "u"}, {"$set": {"a": 1}, "$setOnInsert": {"a": 2}}, True, "touch one path"),
        ({"url": "u"}, {"$set": {"a.b": 1}, "$unset": {"a": ""}}, False, "touch one path"),
        ({"address": "M"}, {"$pull": {"unresolved": {"field": "w"}}, "$push": {"unresolved": {"field": "w"}}},
         False, "touch one path"),
        ({"arr.k": 1}, {"$set": {"arr.$.v": 1}}, True, "cannot be used in an upsert"),
        ({"k": 1}, {"$set": {"arr.$.v": 1}}, False, "needs 'arr' in the filter"),
        ({"url": "u", "fence": {"$lte": 3}}, {"$setOnInsert": {"status": "pending"}}, True, "would lack the field"),
        ({"url": "u"}, {"$set": {"by_url": {"https://x.com/a": 1}}}, False, "holds '.'"),
        ({"url": "u"}, {"$set": {"$where": 1}}, False, "starts with '$'"),
        ({"url": "u"}, {"fence": 1}, False, "mixes operators and plain fields"),
        ({"url": "u"}, [{"$match": {"a": 1}}], False, "only"),
    ],
)
def test_what_a_server_refuses_is_flagged(flt: Any, update: Any, upsert: bool, expect: str) -> None:
    problems = update_problems(flt, update, upsert)
    assert any(expect in p for p in problems), problems


@pytest.mark.parametrize(
    ("flt", "update", "upsert"),
    [
        ({"url": "u", "fence": {"$lte": 3}}, {"$set": {"fence": 3, "status": "ok"}}, True),
        ({"url": "u", "fence": {"$lte": 3}},
         {"$set": {"fence": 3, "request": {"provider": "p"}}, "$setOnInsert": {"status": "pending"}}, True),
        ({"address": "M", "fence": 2}, {"$pull": {"unresolved": {"field": "w"}}, "$set": {"updated_at": 1}}, False),
        ({"_id": "schema"}, {"$max": {"version": 2}}, True),
        ({"arr.k": 1}, {"$set": {"arr.$.v": 1}}, False),
        ({"url": "u"}, [{"$set": {"a": 1}}, {"$unset": "b"}], False),
    ],
)
def test_what_a_server_accepts_passes(flt: Any, update: Any, upsert: bool) -> None:
    assert update_problems(flt, update, upsert) == []


def test_inserted_field_names_are_checked() -> None:
    assert document_problems({"fields": {"url": "https://x.com/a"}}) == []
    assert document_problems({"web": {"https://x.com/a": 1}})
    assert document_problems({"a": [{"$b": 1}]})


def test_the_mongomock_backends_refuse_what_a_server_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    check_mongomock_writes(monkeypatch)
    store = MongoStore(mongomock.MongoClient(tz_aware=True), "sr_shape")
    with pytest.raises(AssertionError, match="touch one path"):
        store.db["tokens"].update_one({"address": "M"}, {"$set": {"a.b": 1}, "$unset": {"a": ""}})
    with pytest.raises(AssertionError, match="touch one path"):
        store.db["tokens"].find_one_and_update({"address": "M"}, {"$set": {"a": 1}, "$setOnInsert": {"a": 2}},
                                               upsert=True)
