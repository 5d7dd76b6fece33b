"""The fenced write's refusal rule (store/write_refusal.py), as a table, and MongoStore's conditional
update filters matching exactly what the rule admits (docs/architecture.md, "Fencing")."""

from __future__ import annotations

from typing import Any

import mongomock
import pytest

from social_recording.store.base import WriteResult
from social_recording.store.mongo import element_filter, state_filter
from social_recording.store.write_refusal import (
    NO_STATE,
    StoredElement,
    StoredState,
    element_admits,
    state_admits,
    url_write_refusal,
)

W = 5
"""The write's fence in every case."""

# (element (status, fence) or None, state (fence, version) or None, expect_version, result, applied_fence)
CASES: list[tuple[tuple[str, int] | None, tuple[int, int] | None, int | None, WriteResult, int]] = [
    (None, None, None, WriteResult.NO_ELEMENT, 0),
    (("error", 6), (9, 3), 1, WriteResult.FENCED, 6),  # the element's fence first
    (("ok", 6), None, None, WriteResult.FENCED, 6),  # a larger fence before `ok` kept
    (("ok", 4), (9, 3), 1, WriteResult.OK_KEPT, 0),  # `ok` kept before the state's fence
    (("error", 4), (9, 3), 1, WriteResult.FENCED, 9),  # the state's fence before its version
    (("error", 4), (3, 2), 1, WriteResult.STALE, 0),
    (("pending", 0), None, 1, WriteResult.STALE, 0),  # no state is version 0
    (("pending", 0), (0, 1), 0, WriteResult.STALE, 0),
    (("pending", 0), None, 0, WriteResult.APPLIED, 0),
    (("error", 4), (3, 2), 2, WriteResult.APPLIED, 0),
    (("error", 4), (3, 2), None, WriteResult.APPLIED, 0),  # no version named: any version
    (("error", 5), (5, 2), 2, WriteResult.APPLIED, 0),  # the same fence again: a replay is applied
]


def _element(e: tuple[str, int] | None) -> StoredElement | None:
    return None if e is None else StoredElement(*e)


def _state(s: tuple[int, int] | None) -> StoredState:
    return NO_STATE if s is None else StoredState(*s)


@pytest.mark.parametrize(("element", "state", "expect_version", "result", "applied_fence"), CASES)
def test_the_first_failing_check_is_the_reason(
    element: tuple[str, int] | None, state: tuple[int, int] | None, expect_version: int | None,
    result: WriteResult, applied_fence: int,
) -> None:
    refusal = url_write_refusal(_element(element), _state(state), W, expect_version)
    if result is WriteResult.APPLIED:
        assert refusal is None
    else:
        assert refusal is not None
        assert (refusal.result, refusal.applied_fence) == (result, applied_fence)


def _matches(flt: dict[str, Any], doc: dict[str, Any] | None) -> bool:
    coll: Any = mongomock.MongoClient().db.c
    if doc is not None:
        coll.insert_one(doc)
    return coll.find_one(flt) is not None


@pytest.mark.parametrize("status", ["pending", "error", "ok"])
@pytest.mark.parametrize("fence", [0, W - 1, W, W + 1])
def test_the_element_filter_matches_what_the_rule_admits(status: str, fence: int) -> None:
    doc = {"address": "a", "url": "u", "status": status, "fence": fence}
    assert _matches(element_filter("a", "u", W), doc) is element_admits(StoredElement(status, fence), W)


@pytest.mark.parametrize("expect_version", [None, 0, 1, 2])
@pytest.mark.parametrize("state", [None, (W - 1, 1), (W, 2), (W + 1, 1), (0, None)])
def test_the_state_filter_matches_what_the_rule_admits(
    state: tuple[int, int | None] | None, expect_version: int | None
) -> None:
    """A missing state matches nothing (the upsert inserts it, where the rule admits version 0); a
    state written before versions existed has none (version 0)."""
    flt = state_filter("u", W, expect_version)
    if state is None:
        assert not _matches(flt, None)
        return
    fence, version = state
    doc = {"url": "u", "fence": fence, **({} if version is None else {"version": version})}
    assert _matches(flt, doc) is state_admits(StoredState(fence, version or 0), W, expect_version)
