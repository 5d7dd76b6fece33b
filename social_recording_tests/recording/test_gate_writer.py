"""DedupeGate and GraphWriter on a real SQLite store (DESIGN §5, §6)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from social_recording.domain.graph import ObjectKind, SocialContractError
from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.recording.gate import DedupeGate
from social_recording.recording.writer import GraphWriter
from social_recording.store.sqlite import SqliteStore
from social_recording_tests.recording.engine_fakes import T0, TG_URL, X_URL, X_URL_2, cyclic_graph, graph_for


def _token(store: SqliteStore, address: str, urls: list[str]) -> None:
    assert store.create_pending_token(TokenProfile(address=address, symbol=address, urls=urls), T0)


def test_writer_writes_objects_metrics_and_links_with_depth(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    links = GraphWriter(store).write("A", X_URL, graph_for(X_URL), T0)
    shapes = sorted((link.object.value, link.link_depth) for link in links)
    # root content + author at depth 0 (the author is folded), quoted content + venue at depth 1
    assert shapes == [("account", 0), ("content", 0), ("content", 1), ("venue", 1)]
    assert [link.shape() for link in store.find_links("A", X_URL)] == [
        link.shape() for link in sorted(links, key=lambda x: (x.link_depth, x.object.value, x.object_id))
    ]
    assert store.count_objects(ObjectKind.CONTENT) == 2
    assert store.count_objects(ObjectKind.ACCOUNT) == 1
    assert store.count_objects(ObjectKind.VENUE) == 1
    author = next(link for link in links if link.object is ObjectKind.ACCOUNT)
    assert store.find_metrics(ObjectKind.ACCOUNT, author.object_id) == {"followers": 10.0}


def test_writer_is_idempotent(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    writer = GraphWriter(store)
    first = writer.write("A", X_URL, graph_for(X_URL), T0)
    second = writer.write("A", X_URL, graph_for(X_URL), T0 + timedelta(hours=1))
    assert [x.shape() for x in first] == [x.shape() for x in second]
    assert len(store.find_links("A", X_URL)) == len(first)
    assert store.count_objects(ObjectKind.CONTENT) == 2


def test_writer_contract_violation_writes_nothing(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    with pytest.raises(SocialContractError):
        GraphWriter(store).write("A", X_URL, cyclic_graph(X_URL), T0)
    assert store.count_objects(ObjectKind.CONTENT) == 0
    assert store.find_links("A", X_URL) == []


def test_writer_checkpoint_stops_before_links(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])

    class Stop(Exception):
        pass

    def checkpoint() -> None:
        raise Stop

    with pytest.raises(Stop):
        GraphWriter(store).write("A", X_URL, graph_for(X_URL), T0, checkpoint=checkpoint)
    assert store.find_links("A", X_URL) == []


def test_link_existing_copies_one_source_and_replaces(store: SqliteStore) -> None:
    _token(store, "A", [X_URL])
    _token(store, "B", [X_URL])
    writer = GraphWriter(store)
    a_links = writer.write("A", X_URL, graph_for(X_URL), T0)
    later = T0 + timedelta(days=1)
    b_links = writer.link_existing("B", X_URL, "A", later)
    assert all(x.token_address == "B" and x.created_at == later for x in b_links)
    assert sorted(x.shape() for x in b_links) == sorted(x.shape() for x in a_links)
    # repeating replaces, never duplicates
    writer.link_existing("B", X_URL, "A", later)
    assert len(store.find_links("B", X_URL)) == len(a_links)
    # a self-copy keeps the rows (source read before delete)
    writer.link_existing("A", X_URL, "A", later)
    assert len(store.find_links("A", X_URL)) == len(a_links)


def test_gate_picks_only_matching_elements(store: SqliteStore) -> None:
    """The multikey trap (seed 002 §10): A is ok on X_URL_2, but its X_URL element is pending."""
    _token(store, "A", [X_URL, X_URL_2])
    store.record_url_result("A", X_URL_2, FetchStatus.OK, T0)
    gate = DedupeGate(store)
    assert gate.lookup(X_URL, T0) is None
    hit = gate.lookup(X_URL_2, T0 + timedelta(days=1))
    assert hit is not None and hit.source_token == "A" and hit.status is FetchStatus.OK
    assert gate.lookup(X_URL_2, T0, exclude_token="A") is None


def test_gate_never_reuses_telegram(store: SqliteStore) -> None:
    _token(store, "A", [TG_URL])
    store.record_url_result("A", TG_URL, FetchStatus.OK, T0)
    assert DedupeGate(store).lookup(TG_URL, T0) is None


def test_gate_failure_is_a_miss(store: SqliteStore, caplog: pytest.LogCaptureFixture) -> None:
    class Broken(SqliteStore):
        def find_tokens_by_social_urls(self, urls):  # type: ignore[no-untyped-def]
            raise RuntimeError("db down")

    broken = Broken(store.path)
    try:
        assert DedupeGate(broken).lookup(X_URL, T0) is None
    finally:
        broken.close()
    assert "dedupe gate failed" in caplog.text
