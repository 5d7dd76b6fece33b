"""The dedupe decision on stored URL states and the GraphWriter on a real SQLite store: planning,
fenced writes, one-row gate lookups."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from social_recording.domain.dedupe import decide
from social_recording.domain.graph import ObjectKind, SocialContractError, SocialGraph
from social_recording.domain.models import TokenLink, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import fresh_answer
from social_recording.domain.urls import Platform
from social_recording.recording.attempt import rules_for
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import ElementWrite, WriteOutcome, WriteResult
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    T0,
    TG_URL,
    X_URL,
    X_URL_2,
    cyclic_graph,
    graph_for,
    seed_result,
)
from test_support.url_states import state_write


def _token(store: SqliteStore, address: str, urls: list[str]) -> None:
    assert store.create_pending_token(TokenProfile(address=address, symbol=address, urls=urls), T0)


def _ok(status: FetchStatus = FetchStatus.OK, at: datetime = T0) -> ElementWrite:
    return ElementWrite(status=status, attempts=1, attempted_at=at, checked_at=at)


def _write(store: SqliteStore, address: str, url: str, graph: SocialGraph, now: datetime, fence: int = 10) -> WriteOutcome:
    writer = GraphWriter(store)
    return writer.record(
        address=address, url=url, platform="x", fence=fence, now=now, element=_ok(at=now), expect_version=None,
        state=state_write(FetchStatus.OK, 1, now, source_token=address), graph_links=writer.plan(graph),
    )


def _sorted(links: list[TokenLink] | tuple[TokenLink, ...]) -> list[TokenLink]:
    return sorted(links, key=lambda x: (x.link_depth, x.object.value, x.object_id))


def test_writer_writes_objects_metrics_and_links_with_depth(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    written = _write(store, "A", X_URL, graph_for(X_URL), T0)
    assert written.result is WriteResult.APPLIED
    shapes = sorted((link.object.value, link.link_depth) for link in written.links)
    # root content + author at depth 0 (the author is folded), quoted content + venue at depth 1
    assert shapes == [("account", 0), ("content", 0), ("content", 1), ("venue", 1)]
    assert [link.shape() for link in store.find_links("A", X_URL)] == [link.shape() for link in _sorted(written.links)]
    assert store.count_objects(ObjectKind.CONTENT) == 2
    assert store.count_objects(ObjectKind.ACCOUNT) == 1
    assert store.count_objects(ObjectKind.VENUE) == 1
    author = next(link for link in written.links if link.object is ObjectKind.ACCOUNT)
    assert store.find_metrics(ObjectKind.ACCOUNT, author.object_id) == {"followers": 10.0}


def test_writer_is_idempotent(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    first = _write(store, "A", X_URL, graph_for(X_URL), T0, fence=10)
    # ok is never replaced: a repeat goes through the store's refusal, rows unchanged
    again = _write(store, "A", X_URL, graph_for(X_URL), T0 + timedelta(hours=1), fence=11)
    assert again.result is WriteResult.OK_KEPT
    assert [x.shape() for x in store.find_links("A", X_URL)] == [x.shape() for x in _sorted(first.links)]
    assert store.count_objects(ObjectKind.CONTENT) == 2


def test_plan_rejects_a_contract_violation_before_any_write(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    with pytest.raises(SocialContractError):
        GraphWriter(store).plan(cyclic_graph(X_URL))
    assert store.count_objects(ObjectKind.CONTENT) == 0
    assert store.find_links("A", X_URL) == []


def test_copy_path_copies_one_source_and_replaces(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    _token(store, "B", [X_URL])
    a = _write(store, "A", X_URL, graph_for(X_URL), T0)
    later = T0 + timedelta(days=1)
    writer = GraphWriter(store)
    element = ElementWrite(FetchStatus.PENDING, 0, None, later)
    b = writer.record(address="B", url=X_URL, platform="x", fence=20, now=later, element=element,
                      expect_version=None, copy_links_from="A")
    assert all(x.token_address == "B" and x.created_at == later for x in b.links)
    assert sorted(x.shape() for x in b.links) == sorted(x.shape() for x in a.links)
    # repeating replaces, never duplicates
    writer.record(address="B", url=X_URL, platform="x", fence=21, now=later, element=element,
                  expect_version=None, copy_links_from="A")
    assert len(store.find_links("B", X_URL)) == len(a.links)


def test_a_lower_fence_changes_nothing(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    writer = GraphWriter(store)
    seeded = writer.record(address="A", url=X_URL, platform="x", fence=50, now=T0,
                           element=ElementWrite(FetchStatus.ERROR, 1, T0, T0), expect_version=None,
                           state=state_write(FetchStatus.ERROR, 1, T0))
    assert seeded.result.applied
    stale = writer.record(address="A", url=X_URL, platform="x", fence=49, now=T0 + timedelta(minutes=1),
                          element=_ok(at=T0 + timedelta(minutes=1)), expect_version=None,
                          state=state_write(FetchStatus.OK, 2, T0 + timedelta(minutes=1), source_token="A"),
                          graph_links=writer.plan(graph_for(X_URL)))
    assert stale.result is WriteResult.FENCED and stale.applied_fence == 50
    element = store.find_element("A", X_URL)
    assert element is not None and (element.status, element.attempts, element.fence) == (FetchStatus.ERROR, 1, 50)
    assert store.find_links("A", X_URL) == [] and store.count_objects(ObjectKind.CONTENT) == 0
    state = store.find_url_state(X_URL)
    assert state is not None and (state.status, state.attempts) == (FetchStatus.ERROR, 1)


def _lookup(store: SqliteStore, url: str, now: datetime):  # type: ignore[no-untyped-def]
    return decide(store.find_url_state(url), now)


def test_gate_reads_one_url_state(store: SqliteStore) -> None:
    """A holds X_URL_2 ok, but its X_URL element is pending: only X_URL_2 has an answer."""
    _token(store, "A", [X_URL, X_URL_2])
    seed_result(store, "A", X_URL_2, FetchStatus.OK, T0)
    assert _lookup(store, X_URL, T0) is None
    hit = _lookup(store, X_URL_2, T0 + timedelta(days=1))
    assert hit is not None and hit.source_token == "A" and hit.status is FetchStatus.OK
    assert _lookup(store, X_URL_2, T0 + timedelta(days=14)) is None  # past the TTL: fetch again


@pytest.mark.parametrize("status", [FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID])
def test_gate_reuses_every_answer_but_exhausted(store: SqliteStore, status: FetchStatus) -> None:
    _token(store, "A", [X_URL])
    seed_result(store, "A", X_URL, status, T0)
    hit = _lookup(store, X_URL, T0 + timedelta(days=1))
    assert hit is not None and hit.status is status and hit.source_token is None


@pytest.mark.parametrize("status", [FetchStatus.EXHAUSTED, FetchStatus.ERROR])
def test_gate_does_not_reuse_a_spent_budget_or_a_failure(store: SqliteStore, status: FetchStatus) -> None:
    _token(store, "A", [X_URL])
    seed_result(store, "A", X_URL, status, T0)
    assert _lookup(store, X_URL, T0 + timedelta(minutes=1)) is None


def test_gate_never_reuses_telegram(store: SqliteStore) -> None:
    _token(store, "A", [TG_URL])
    seed_result(store, "A", TG_URL, FetchStatus.OK, T0)
    rules = rules_for(Platform.TELEGRAM, max_attempts=5, min_interval=timedelta(hours=1))
    assert fresh_answer(store.find_url_state(TG_URL), T0, rules) is None
