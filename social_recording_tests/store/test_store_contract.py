"""The Store contract (store/base.py docstrings), run on every backend by the `store` fixture."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import PaidRequest, TokenProfile, UnresolvedValue
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import (
    CandidateQuery,
    ElementWrite,
    Store,
    UrlWrite,
    WriteResult,
)
from social_recording_tests.store._seed import (
    next_fence,
    planned,
    record_call,
    record_no_call,
    url_write,
)
from social_recording_tests.store.conftest import Backend, seed_web_and_fingerprints
from test_support.url_states import state_write

# Millisecond-precise instants: BSON keeps milliseconds, and the contract is exact equality.
T0 = datetime(2025, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
T2 = T0 + timedelta(hours=2)
T3 = T0 + timedelta(hours=3)
KST = timezone(timedelta(hours=9))

U_X = "https://x.com/i/status/1"
U_TG = "https://t.me/coin"
U_WEB = "https://coin.example"
U_GH = "https://github.com/coin/repo"

ALL_BUT_OK = frozenset(FetchStatus) - {FetchStatus.OK}


def profile(
    address: str = "Mint1",
    symbol: str | None = "COIN",
    urls: list[str] | None = None,
    unresolved: tuple[UnresolvedValue, ...] = (),
) -> TokenProfile:
    return TokenProfile(
        address=address,
        symbol=symbol,
        image="https://img.example/coin.png",
        first_transfer_at=T0 - timedelta(days=1),
        urls=[U_X, U_TG, U_WEB] if urls is None else urls,
        unresolved=unresolved,
    )


def obj(key: str = "tweet:1", **fields: object) -> SocialObject:
    return SocialObject(
        platform=Platform.X,
        platform_key=key,
        subtype="tweet",
        fields=dict(fields),
        outbound_urls=["https://coin.example"],
        media_urls=["https://pbs.twimg.com/media/A.jpg?name=orig"],
        avatar_url="https://pbs.twimg.com/profile/a.png",
        metrics={"likes": 3.0},
    )


def query(
    statuses: frozenset[FetchStatus] | set[FetchStatus] = ALL_BUT_OK,
    recorded_by: datetime = T3,
    limit: int = 100,
    addresses: tuple[str, ...] | None = None,
    unsupported_platforms: frozenset[str] | None = None,
) -> CandidateQuery:
    """The selection of elements recorded at or before `recorded_by`: the writes here give no due
    time, so each element is due one base interval after its recording."""
    return CandidateQuery(frozenset(statuses), recorded_by + DEFAULT_MIN_INTERVAL, limit, addresses,
                          unsupported_platforms)


def keys(store: Store, q: CandidateQuery) -> list[tuple[str, str]]:
    return [(c.address, c.url) for c in store.select_candidates(q)]


def shapes(store: Store, address: str, url: str) -> list[tuple[str, str, str, str, str, int]]:
    return [link.shape() for link in store.find_links(address, url)]


def snapshot(store: Store, address: str, url: str) -> tuple[object, ...]:
    """Everything one recording of (address, url) may touch."""
    return (
        store.find_token(address),
        store.find_element(address, url),
        store.find_url_state(url),
        store.find_links(address, url),
        store.count_links(),
        tuple(store.count_objects(k) for k in ObjectKind),
    )


# ----------------------------------------------------------------------------- protocol, tokens


def test_backend_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_unknown_token_element_and_url_state_are_none(store: Store) -> None:
    assert store.find_token("nope") is None
    assert store.find_element("nope", U_X) is None
    assert store.find_url_state(U_X) is None
    store.create_pending_token(profile(), now=T0)
    assert store.find_element("Mint1", "https://x.com/i/status/999") is None
    assert store.find_url_state(U_X) is None  # creating a token decides nothing about its URLs


def test_create_pending_token_stores_every_url_pending(store: Store) -> None:
    assert store.create_pending_token(profile(), now=T0) is True

    doc = store.find_token("Mint1")
    assert doc is not None
    assert (doc.address, doc.symbol, doc.image) == ("Mint1", "COIN", "https://img.example/coin.png")
    assert doc.first_transfer_at == T0 - timedelta(days=1)
    assert doc.fingerprints == [] and doc.web is None
    assert doc.created_at == T0 and doc.updated_at == T0
    assert doc.fence == 0 and doc.unresolved == []
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]  # order kept
    for el in doc.social_urls:
        assert (el.status, el.attempted_at, el.attempts, el.checked_at) == (FetchStatus.PENDING, None, 0, None)
        assert (el.cause, el.detail, el.fence) == (None, None, 0)
        assert store.find_element("Mint1", el.url) == el


def test_create_pending_token_keeps_unresolved_values(store: Store) -> None:
    raw = (
        UnresolvedValue(field="twitter", value="https://t.co/abc", reason="timeout", attempts=1),
        UnresolvedValue(field="website", value="https://bit.ly/x", reason="HTTP 503", attempts=2, checked_at=T0),
    )
    assert store.create_pending_token(profile(urls=[U_X], unresolved=raw), now=T0)
    doc = store.find_token("Mint1")
    assert doc is not None
    assert [u.url for u in doc.social_urls] == [U_X]  # raw values are not elements
    assert sorted(doc.unresolved, key=lambda v: v.field) == list(raw)


def test_datetimes_round_trip_tz_aware_utc(store: Store) -> None:
    local = datetime(2025, 3, 1, 21, 0, 0, 500000, tzinfo=KST)  # == 12:00:00.5 UTC
    store.create_pending_token(TokenProfile(address="Mint1", first_transfer_at=local, urls=[U_X]), now=local)
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, local)
    store.save_paid_request(U_X, "x", next_fence(), PaidRequest(provider="apify", request_id="r1", submitted_at=local))
    doc = store.find_token("Mint1")
    assert doc is not None
    el = doc.element(U_X)
    state = store.find_url_state(U_X)
    assert el is not None and state is not None and state.request is not None
    (candidate,) = store.select_candidates(query())
    for value in (
        doc.first_transfer_at, doc.created_at, el.attempted_at, el.checked_at, state.attempted_at,
        state.request.submitted_at, candidate.checked_at,
    ):
        assert value is not None
        assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
        assert value == local
    naive = datetime(2025, 1, 2, 3, 4, 5, 6000)  # naive input is taken as UTC
    store.create_pending_token(TokenProfile(address="Mint2", urls=[]), now=naive)
    doc2 = store.find_token("Mint2")
    assert doc2 is not None and doc2.created_at == naive.replace(tzinfo=UTC)


def test_sub_millisecond_precision(backend: Backend) -> None:
    """SQLite keeps microseconds; MongoDB (BSON) truncates to the millisecond. Either way tz-aware UTC."""
    store = backend.store
    precise = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    store.create_pending_token(profile(urls=[U_X]), now=precise)
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, precise)
    el = store.find_element("Mint1", U_X)
    assert el is not None and el.checked_at is not None and el.checked_at.utcoffset() == timedelta(0)
    expected = precise if backend.name == "sqlite" else precise.replace(microsecond=123000)
    assert (el.attempted_at, el.checked_at) == (expected, expected)


def test_create_pending_token_is_insert_only(store: Store) -> None:
    raw = (UnresolvedValue(field="twitter", value="https://t.co/abc", reason="timeout"),)
    assert store.create_pending_token(profile(unresolved=raw), now=T0) is True
    record_call(store, "Mint1", U_X, FetchStatus.OK, T1)
    before = store.find_token("Mint1")

    again = profile(symbol="OTHER", urls=["https://x.com/other", U_X], unresolved=())
    assert store.create_pending_token(again, now=T2) is False

    after = store.find_token("Mint1")
    assert after == before  # symbol, urls, statuses, raw values, timestamps: nothing changed
    assert after is not None and after.symbol == "COIN"
    assert store.find_element("Mint1", "https://x.com/other") is None


def test_create_pending_token_drops_duplicate_urls(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X, U_TG, U_X, U_WEB, U_TG]), now=T0)
    doc = store.find_token("Mint1")
    assert doc is not None
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]
    assert store.status_counts().urls == 3


@pytest.mark.parametrize("bad", ["", "   "])
def test_create_pending_token_rejects_an_empty_url_and_stores_nothing(store: Store, bad: str) -> None:
    with pytest.raises(ValueError, match=r"Mint1.*non-empty"):
        store.create_pending_token(profile(urls=[U_X, bad]), now=T0)
    assert store.find_token("Mint1") is None
    assert store.find_element("Mint1", U_X) is None


def test_create_pending_token_without_urls(store: Store) -> None:
    assert store.create_pending_token(profile(urls=[]), now=T0) is True
    doc = store.find_token("Mint1")
    assert doc is not None and doc.social_urls == []


def test_find_existing_addresses(store: Store) -> None:
    for a in ("A1", "A2", "A3"):
        store.create_pending_token(profile(a), now=T0)
    assert store.find_existing_addresses(["A1", "A3", "B9", "A1"]) == {"A1", "A3"}
    assert store.find_existing_addresses(["B1", "B2"]) == set()
    assert store.find_existing_addresses([]) == set()


def test_long_address_lists(store: Store) -> None:
    for i in range(0, 1200, 100):
        store.create_pending_token(profile(f"T{i:05d}", urls=[]), now=T0)
    asked = [f"T{i:05d}" for i in range(1200)]
    assert store.find_existing_addresses(asked) == {f"T{i:05d}" for i in range(0, 1200, 100)}
    # The retry selection narrowed by a long address list (chunked IN-lists on SQLite).
    for address in ("T00050", "Z1", "T00900x"):
        store.create_pending_token(profile(address, urls=[U_X]), now=T0)
    pending = {FetchStatus.PENDING}
    got = keys(store, query(pending, addresses=tuple(reversed(asked)), limit=5))
    assert got == [("T00050", U_X)]
    got = keys(store, query(pending, addresses=(*asked, "T00900x", *asked), limit=2))
    assert got == [("T00050", U_X), ("T00900x", U_X)]


# ----------------------------------------------------------------------------- apply_url_write


def test_a_call_writes_the_element_the_url_state_and_the_token_stamp(backend: Backend) -> None:
    store = backend.store
    store.create_pending_token(profile(), now=T0)
    web = {"domain": "coin.example", "scan_time": T0}
    seed_web_and_fingerprints(backend, "Mint1", web, ["favicon:abc", "title:coin"])

    fence = next_fence()
    out = record_call(store, "Mint1", U_TG, FetchStatus.ERROR, T1, fence=fence, detail="HTTP 503")
    assert out.result is WriteResult.APPLIED and out.result.applied
    assert out.links == () and out.applied_fence == 0

    doc = store.find_token("Mint1")
    assert doc is not None
    tg = doc.element(U_TG)
    assert tg is not None
    assert (tg.status, tg.attempted_at, tg.attempts, tg.checked_at) == (FetchStatus.ERROR, T1, 1, T1)
    assert (tg.cause, tg.detail, tg.fence) == (None, "HTTP 503", fence)
    assert store.find_element("Mint1", U_TG) == tg
    for other in (U_X, U_WEB):
        el = doc.element(other)
        assert el is not None and (el.status, el.attempts, el.checked_at, el.fence) == (
            FetchStatus.PENDING, 0, None, 0,
        )
    assert doc.fingerprints == ["favicon:abc", "title:coin"]
    assert doc.web == web
    assert (doc.symbol, doc.image, doc.created_at) == ("COIN", "https://img.example/coin.png", T0)
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]
    assert doc.updated_at == T1
    assert doc.fence == 0  # the token lock's fence is not the URL lock's

    state = store.find_url_state(U_TG)
    assert state is not None
    assert (state.url, state.platform, state.status, state.attempted_at, state.attempts) == (
        U_TG, "telegram", FetchStatus.ERROR, T1, 1,
    )
    assert (state.source_token, state.fence, state.request, state.updated_at) == (None, fence, None, T1)
    assert store.find_url_state(U_X) is None


def test_a_zero_call_outcome_keeps_attempts_and_last_call(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, T1)
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, T2)
    state_before = store.find_url_state(U_X)
    out = record_no_call(store, "Mint1", U_X, FetchStatus.SKIPPED_PAID, T3, cause=Cause.PAID_DISABLED,
                         detail="paid calls are disabled")
    assert out.result is WriteResult.APPLIED
    el = store.find_element("Mint1", U_X)
    assert el is not None
    assert (el.status, el.attempted_at, el.attempts, el.checked_at) == (FetchStatus.SKIPPED_PAID, T2, 2, T3)
    assert (el.cause, el.detail) == (Cause.PAID_DISABLED, "paid calls are disabled")
    state = store.find_url_state(U_X)
    assert state is not None and state_before is not None
    # Without a state write the URL's answer stays; only its fence follows the element's.
    assert state.model_copy(update={"fence": state_before.fence}) == state_before
    assert state.fence == el.fence
    # A URL no call ever decided gets no state from a zero-call outcome.
    record_no_call(store, "Mint1", U_TG, FetchStatus.UNSUPPORTED, T3, cause=Cause.NO_GENERATOR)
    assert store.find_url_state(U_TG) is None


def test_a_write_for_an_unknown_element_changes_nothing(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    before = store.find_token("Mint1")
    links = [planned("tweet:9")]
    for address, url in (("Mint1", "https://x.com/unknown"), ("NoSuchMint", U_X)):
        out = store.apply_url_write(url_write(address, url, next_fence(), FetchStatus.OK, T1, links=links))
        assert out.result is WriteResult.NO_ELEMENT and not out.result.applied
        assert out.links == ()
        assert store.find_url_state(url) is None
    assert store.find_token("Mint1") == before
    assert store.find_token("NoSuchMint") is None
    assert store.count_links() == 0 and store.count_objects(ObjectKind.CONTENT) == 0


def test_url_write_rejects_graph_and_copy_together_and_a_missing_fence() -> None:
    element = ElementWrite(FetchStatus.OK, 1, T1, T1)
    with pytest.raises(ValueError, match="not both"):
        UrlWrite("M", U_X, "x", 1, T1, element, graph_links=[], copy_links_from="Other")
    for bad in (0, -3):
        with pytest.raises(ValueError, match=str(bad)):
            UrlWrite("M", U_X, "x", bad, T1, element)


def test_ok_writes_the_graph_objects_metrics_and_links(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    links = [planned("tweet:1", depth=0, text="root"), planned("acct:1", ObjectKind.ACCOUNT, 0),
             planned("tweet:0", depth=1, text="quoted")]
    out = record_call(store, "Mint1", U_X, FetchStatus.OK, T1, links=links)
    assert out.result is WriteResult.APPLIED
    got = store.find_links("Mint1", U_X)
    assert len(got) == 3 and store.count_links() == 3
    assert sorted(out.links, key=lambda lk: lk.shape()) == sorted(got, key=lambda lk: lk.shape())
    assert [(lk.link_depth, lk.object) for lk in got] == [
        (0, ObjectKind.ACCOUNT), (0, ObjectKind.CONTENT), (1, ObjectKind.CONTENT),
    ]
    assert all(
        (lk.token_address, lk.entry_url, lk.platform, lk.subtype, lk.created_at) == ("Mint1", U_X, "x", "tweet", T1)
        for lk in got
    )
    assert store.count_objects(ObjectKind.CONTENT) == 2 and store.count_objects(ObjectKind.ACCOUNT) == 1
    by_key = {}
    for lk in got:
        row = store.get_object(lk.object, lk.object_id)
        assert row is not None
        by_key[row["platform_key"]] = (lk, row)
        assert store.find_metrics(lk.object, lk.object_id) == {"likes": 1.0}
        assert row["created_at"] == T1
    assert by_key["tweet:1"][1]["fields"] == {"text": "root"}
    assert by_key["tweet:0"][0].link_depth == 1
    state = store.find_url_state(U_X)
    assert state is not None and (state.status, state.source_token) == (FetchStatus.OK, "Mint1")
    el = store.find_element("Mint1", U_X)
    assert el is not None and el.status is FetchStatus.OK


def test_graph_objects_are_never_overwritten_and_first_metrics_are_kept(store: Store) -> None:
    store.create_pending_token(profile("A", urls=[U_X]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X]), now=T0)
    first = store.upsert_object(ObjectKind.CONTENT, obj("tweet:1", text="first"), now=T0)
    store.record_first_metrics(ObjectKind.CONTENT, first, {"likes": 7.0}, T0)

    record_call(store, "A", U_X, FetchStatus.OK, T1, links=[planned("tweet:1", text="second")])
    (lk,) = store.find_links("A", U_X)
    assert lk.object_id == first
    row = store.get_object(ObjectKind.CONTENT, first)
    assert row is not None and row["fields"] == {"text": "first"} and row["created_at"] == T0
    assert store.find_metrics(ObjectKind.CONTENT, first) == {"likes": 7.0}
    assert store.count_objects(ObjectKind.CONTENT) == 1
    # Another token reaching the same object links the same row.
    store.apply_url_write(url_write("B", U_X, next_fence(), FetchStatus.OK, T2, links=[planned("tweet:1")]))
    assert [lk.object_id for lk in store.find_links("B", U_X)] == [first]
    assert store.count_objects(ObjectKind.CONTENT) == 1


def test_links_are_replaced_not_duplicated_on_a_repeated_write(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X, U_TG]), now=T0)
    store.create_pending_token(profile("Other", urls=[U_X]), now=T0)
    record_call(store, "Other", U_X, FetchStatus.ERROR, T0)  # not ok: no links
    fence = next_fence()
    links = [planned("tweet:1"), planned("tweet:2", depth=1)]
    w = url_write("Mint1", U_X, fence, FetchStatus.ERROR, T1, links=links)
    assert store.apply_url_write(w).result is WriteResult.APPLIED
    assert store.apply_url_write(w).result is WriteResult.APPLIED  # same fence again: a replay
    assert len(store.find_links("Mint1", U_X)) == 2 and store.count_links() == 2
    # A later write with another graph replaces this URL's links, and only them.
    store.apply_url_write(url_write("Mint1", U_TG, next_fence(), FetchStatus.ERROR, T1, links=[planned("t:9")]))
    w2 = url_write("Mint1", U_X, next_fence(), FetchStatus.ERROR, T2, links=[planned("tweet:3")])
    out = store.apply_url_write(w2)
    assert [lk.object_id for lk in out.links] == [lk.object_id for lk in store.find_links("Mint1", U_X)]
    assert len(store.find_links("Mint1", U_X)) == 1
    assert len(store.find_links("Mint1", U_TG)) == 1
    assert store.count_links() == 2
    # An empty graph clears them; a write without a graph leaves them as they are.
    store.apply_url_write(url_write("Mint1", U_X, next_fence(), FetchStatus.ERROR, T2, links=[]))
    assert store.find_links("Mint1", U_X) == []
    record_no_call(store, "Mint1", U_TG, FetchStatus.ERROR, T3, cause=Cause.BACKOFF)
    assert len(store.find_links("Mint1", U_TG)) == 1


def test_copy_path_copies_one_source_tokens_links(store: Store) -> None:
    for address in ("Src", "Alt", "Dst"):
        store.create_pending_token(profile(address, urls=[U_X, U_TG]), now=T0)
    record_call(store, "Src", U_X, FetchStatus.OK, T1, links=[planned("tweet:1"), planned("acct:1", ObjectKind.ACCOUNT)])
    store.apply_url_write(url_write("Alt", U_X, next_fence(), FetchStatus.ERROR, T1, with_state=False,
                                    links=[planned("tweet:1"), planned("tweet:alt", depth=1)]))
    record_call(store, "Src", U_TG, FetchStatus.OK, T1, links=[planned("tg:1")])
    before_objects = store.count_objects(ObjectKind.CONTENT)

    out = record_no_call(store, "Dst", U_X, FetchStatus.OK, T2, copy_links_from="Src", detail="reused ok of Src")
    assert out.result is WriteResult.APPLIED
    assert shapes(store, "Dst", U_X) == shapes(store, "Src", U_X)  # Src's links only, not Alt's
    assert len(out.links) == 2
    assert all(lk.token_address == "Dst" and lk.created_at == T2 for lk in store.find_links("Dst", U_X))
    assert store.find_links("Dst", U_TG) == []  # only this URL's links
    assert store.count_objects(ObjectKind.CONTENT) == before_objects  # no object created by a copy
    el = store.find_element("Dst", U_X)
    assert el is not None and (el.status, el.attempts, el.attempted_at) == (FetchStatus.OK, 0, None)
    state = store.find_url_state(U_X)
    assert state is not None and state.source_token == "Src"  # the copy did not rename the source
    # Copying again (a replay) gives the same rows, not twice as many.
    total = store.count_links()
    store.create_pending_token(profile("Dst2", urls=[U_X]), now=T0)
    record_no_call(store, "Dst2", U_X, FetchStatus.NOT_FOUND, T2, copy_links_from="Src")
    record_no_call(store, "Dst2", U_X, FetchStatus.NOT_FOUND, T2, copy_links_from="Src")
    assert store.count_links() == total + 2


def test_copy_from_itself_is_harmless_and_from_a_token_without_links_clears(store: Store) -> None:
    store.create_pending_token(profile("Src", urls=[U_X]), now=T0)
    store.create_pending_token(profile("Empty", urls=[U_X]), now=T0)
    store.apply_url_write(url_write("Src", U_X, next_fence(), FetchStatus.ERROR, T1,
                                    links=[planned("tweet:1"), planned("tweet:2", depth=1)]))
    before = shapes(store, "Src", U_X)
    out = record_no_call(store, "Src", U_X, FetchStatus.NOT_FOUND, T2, copy_links_from="Src")
    assert out.result is WriteResult.APPLIED and len(out.links) == 2
    assert shapes(store, "Src", U_X) == before
    assert store.count_links() == 2
    record_no_call(store, "Src", U_X, FetchStatus.NOT_FOUND, T3, copy_links_from="Empty")
    assert store.find_links("Src", U_X) == [] and store.count_links() == 0


def test_a_url_state_write_stores_exactly_the_values_it_carries(store: Store) -> None:
    """The state machine decides every field (the best answer kept, the streak, the open request):
    the store applies them as given, and moves the version on."""
    store.create_pending_token(profile("A", urls=[U_X]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X]), now=T0)
    record_call(store, "A", U_X, FetchStatus.OK, T1)
    before = store.find_url_state(U_X)
    assert before is not None and (before.answer, before.source_token) == (FetchStatus.OK, "A")
    req = PaidRequest(provider="urlscan", request_id="scan-9", submitted_at=T2)
    kept = replace(state_write(FetchStatus.ERROR, 2, T2), status=FetchStatus.OK, answer=FetchStatus.OK,
                   answered_at=T1, source_token="A", streak=1, request=req)
    w = UrlWrite("B", U_X, "x", next_fence(), T2, ElementWrite(FetchStatus.OK, 1, T2, T2), state=kept,
                 expect_version=before.version)
    assert store.apply_url_write(w).result is WriteResult.APPLIED
    state = store.find_url_state(U_X)
    assert state is not None
    assert (state.status, state.answer, state.answered_at, state.source_token, state.streak, state.attempts,
            state.attempted_at, state.request, state.updated_at) == (
        FetchStatus.OK, FetchStatus.OK, T1, "A", 1, 2, T2, req, T2)
    assert state.version == before.version + 1


def test_a_write_made_on_an_older_version_is_refused_as_stale(store: Store) -> None:
    """A decision read version v; a late holder wrote v+1 meanwhile: the write is refused, changing
    nothing, so the recorder reads again and merges instead of overwriting."""
    store.create_pending_token(profile("A", urls=[U_X]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X]), now=T0)
    record_call(store, "A", U_X, FetchStatus.OK, T1)
    read = store.find_url_state(U_X)
    assert read is not None
    store.save_paid_request(U_X, "x", next_fence(), PaidRequest(provider="p", request_id="r", submitted_at=T2))
    moved = store.find_url_state(U_X)
    assert moved is not None and moved.version == read.version + 1
    for state in (None, state_write(FetchStatus.NOT_FOUND, 3, T3)):
        stale = UrlWrite("B", U_X, "x", next_fence(), T3, ElementWrite(FetchStatus.NOT_FOUND, 1, T3, T3),
                         state=state, expect_version=read.version)
        assert store.apply_url_write(stale).result is WriteResult.STALE
        assert store.find_url_state(U_X) == moved
        el = store.find_element("B", U_X)
        assert el is not None and el.status is FetchStatus.PENDING
    fresh = UrlWrite("B", U_X, "x", next_fence(), T3, ElementWrite(FetchStatus.NOT_FOUND, 1, T3, T3),
                     expect_version=moved.version)
    assert store.apply_url_write(fresh).result is WriteResult.APPLIED
    # With no state read at all (version 0), a state that appeared meanwhile makes the write stale too.
    store.create_pending_token(profile("C", urls=[U_TG]), now=T0)
    record_no_call(store, "C", U_TG, FetchStatus.ERROR, T1)
    assert store.find_url_state(U_TG) is None
    store.save_paid_request(U_TG, "telegram", next_fence(), PaidRequest(provider="p", request_id="r", submitted_at=T1))
    late = UrlWrite("C", U_TG, "telegram", next_fence(), T2, ElementWrite(FetchStatus.ERROR, 1, T2, T2),
                    expect_version=0)
    assert store.apply_url_write(late).result is WriteResult.STALE


# ----------------------------------------------------------------------------- fencing


def test_a_lower_fence_is_refused_and_changes_nothing(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    store.apply_url_write(url_write("Mint1", U_X, 20, FetchStatus.ERROR, T1, attempts=1, links=[planned("a")]))
    before = snapshot(store, "Mint1", U_X)

    out = store.apply_url_write(
        url_write("Mint1", U_X, 19, FetchStatus.NOT_FOUND, T2, attempts=2, links=[planned("b"), planned("c")])
    )
    assert out.result is WriteResult.FENCED and not out.result.applied
    assert out.applied_fence == 20 and out.links == ()
    assert snapshot(store, "Mint1", U_X) == before
    # A stale zero-call write, or a stale copy, is refused the same way.
    for stale in (
        UrlWrite("Mint1", U_X, "x", 5, T2, ElementWrite(FetchStatus.SKIPPED_PAID, 1, T1, T2)),
        UrlWrite("Mint1", U_X, "x", 5, T2, ElementWrite(FetchStatus.OK, 1, T1, T2), copy_links_from="Mint1"),
    ):
        assert store.apply_url_write(stale).result is WriteResult.FENCED
    assert snapshot(store, "Mint1", U_X) == before


def test_an_equal_or_higher_fence_applies(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    assert store.apply_url_write(url_write("Mint1", U_X, 20, FetchStatus.ERROR, T1)).result is WriteResult.APPLIED
    assert store.apply_url_write(url_write("Mint1", U_X, 20, FetchStatus.ERROR, T2, attempts=2)).result.applied
    el = store.find_element("Mint1", U_X)
    assert el is not None and (el.attempts, el.fence, el.checked_at) == (2, 20, T2)
    assert store.apply_url_write(url_write("Mint1", U_X, 21, FetchStatus.BLOCKED, T3, attempts=3)).result.applied
    el = store.find_element("Mint1", U_X)
    state = store.find_url_state(U_X)
    assert el is not None and (el.status, el.attempts, el.fence) == (FetchStatus.BLOCKED, 3, 21)
    assert state is not None and (state.status, state.attempts, state.fence) == (FetchStatus.BLOCKED, 3, 21)


def test_the_url_states_fence_refuses_a_stale_holder_on_another_token(store: Store) -> None:
    """Fences belong to the URL lock: a newer holder that wrote the URL's state for one token
    outranks an older holder writing another token's element of the same URL."""
    store.create_pending_token(profile("A", urls=[U_X]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X]), now=T0)
    store.apply_url_write(url_write("A", U_X, 30, FetchStatus.NOT_FOUND, T1))
    before = snapshot(store, "B", U_X)
    out = store.apply_url_write(url_write("B", U_X, 29, FetchStatus.ERROR, T2, links=[planned("z")]))
    assert (out.result, out.applied_fence) == (WriteResult.FENCED, 30)
    assert snapshot(store, "B", U_X) == before
    el = store.find_element("B", U_X)
    assert el is not None and el.fence == 0
    # A zero-call write also raises the URL state's fence, so it refuses older holders too.
    store.create_pending_token(profile("C", urls=[U_X]), now=T0)
    record_no_call(store, "C", U_X, FetchStatus.NOT_FOUND, T2, fence=40)
    out = store.apply_url_write(url_write("B", U_X, 35, FetchStatus.ERROR, T2))
    assert (out.result, out.applied_fence) == (WriteResult.FENCED, 40)


def test_ok_is_never_replaced_even_with_a_higher_fence(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    record_call(store, "Mint1", U_X, FetchStatus.OK, T1, fence=10, links=[planned("tweet:1")])
    before = snapshot(store, "Mint1", U_X)
    for write in (
        url_write("Mint1", U_X, 11, FetchStatus.ERROR, T2, attempts=2, links=[planned("tweet:2")]),
        url_write("Mint1", U_X, 12, FetchStatus.OK, T2, attempts=2, links=[]),
        UrlWrite("Mint1", U_X, "x", 13, T2, ElementWrite(FetchStatus.PENDING, 0, None, T2), copy_links_from="X"),
    ):
        out = store.apply_url_write(write)
        assert out.result is WriteResult.OK_KEPT and not out.result.applied and out.links == ()
    assert snapshot(store, "Mint1", U_X) == before
    stale = store.apply_url_write(url_write("Mint1", U_X, 9, FetchStatus.ERROR, T2))
    assert stale.result is WriteResult.FENCED
    assert snapshot(store, "Mint1", U_X) == before


# ----------------------------------------------------------------------------- paid requests


def test_save_paid_request_creates_a_pending_state_and_is_fenced(store: Store) -> None:
    req = PaidRequest(provider="urlscan", request_id="scan-1", submitted_at=T1)
    assert store.save_paid_request(U_WEB, "web", 10, req) is WriteResult.APPLIED
    state = store.find_url_state(U_WEB)
    assert state is not None
    assert (state.status, state.platform, state.attempts, state.attempted_at, state.source_token) == (
        FetchStatus.PENDING, "web", 0, None, None,
    )
    assert (state.request, state.fence) == (req, 10)

    newer = PaidRequest(provider="urlscan", request_id="scan-2", submitted_at=T2)
    assert store.save_paid_request(U_WEB, "web", 9, newer) is WriteResult.FENCED
    assert store.find_url_state(U_WEB) == state
    assert store.save_paid_request(U_WEB, "web", 10, newer) is WriteResult.APPLIED  # equal fence: same holder
    state = store.find_url_state(U_WEB)
    assert state is not None and state.request == newer


def test_a_paid_request_is_kept_or_cleared_by_the_next_write(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    record_call(store, "Mint1", U_WEB, FetchStatus.ERROR, T0, fence=5)
    req = PaidRequest(provider="apify", request_id="run-1", submitted_at=T1)
    assert store.save_paid_request(U_WEB, "web", 6, req) is WriteResult.APPLIED
    state = store.find_url_state(U_WEB)
    assert state is not None and (state.status, state.attempts, state.request) == (FetchStatus.ERROR, 1, req)
    # The element's own write with a lower fence than the request's is refused by the URL state.
    out = store.apply_url_write(url_write("Mint1", U_WEB, 5, FetchStatus.ERROR, T1, attempts=2))
    assert (out.result, out.applied_fence) == (WriteResult.FENCED, 6)
    # A write that keeps the request (the run is still going) ...
    kept = url_write("Mint1", U_WEB, 6, FetchStatus.ERROR, T1, attempts=2, request=req)
    assert store.apply_url_write(kept).result is WriteResult.APPLIED
    state = store.find_url_state(U_WEB)
    assert state is not None and (state.attempts, state.request) == (2, req)
    # ... a write without a state leaves it too; the final answer clears it.
    record_no_call(store, "Mint1", U_WEB, FetchStatus.ERROR, T2, fence=7)
    state = store.find_url_state(U_WEB)
    assert state is not None and state.request == req
    done = url_write("Mint1", U_WEB, 8, FetchStatus.OK, T2, attempts=3)
    assert store.apply_url_write(done).result is WriteResult.APPLIED
    state = store.find_url_state(U_WEB)
    assert state is not None and (state.status, state.request, state.source_token) == (FetchStatus.OK, None, "Mint1")
    assert store.save_paid_request(U_WEB, "web", 7, req) is WriteResult.FENCED


# ----------------------------------------------------------------------------- retry selection


def test_candidate_query_rejects_ok_and_a_bad_limit() -> None:
    with pytest.raises(ValueError, match="ok"):
        CandidateQuery(frozenset({FetchStatus.OK, FetchStatus.ERROR}), T0, 10)
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="limit"):
            CandidateQuery(frozenset({FetchStatus.ERROR}), T0, bad)  # type: ignore[arg-type]


def test_candidates_oldest_first_never_recorded_first_ties_by_address_and_url(store: Store) -> None:
    # Created in an order that is neither address nor URL order.
    store.create_pending_token(profile("C", urls=[U_TG, U_X]), now=T0)
    store.create_pending_token(profile("A", urls=[U_WEB, U_X]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X]), now=T0)
    record_call(store, "B", U_X, FetchStatus.ERROR, T2)
    record_call(store, "C", U_TG, FetchStatus.ERROR, T1)
    record_no_call(store, "A", U_WEB, FetchStatus.UNSUPPORTED, T1, cause=Cause.NO_GENERATOR)
    expected = [
        ("A", U_X), ("C", U_X),  # never recorded: first, by address
        ("A", U_WEB), ("C", U_TG),  # recorded at T1: by address
        ("B", U_X),  # recorded at T2
    ]
    got = store.select_candidates(query())
    assert [(c.address, c.url) for c in got] == expected
    assert [c.checked_at for c in got] == [None, None, T1, T1, T2]
    for limit in range(1, 6):
        assert keys(store, query(limit=limit)) == expected[:limit]
    # Elements of one token never recorded: URL order.
    store.create_pending_token(profile("0", urls=[U_X, U_TG, U_WEB]), now=T0)
    assert keys(store, query(limit=3)) == [("0", U_WEB), ("0", U_TG), ("0", U_X)]


def test_candidates_carry_the_elements_values(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X, U_WEB]), now=T0)
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, T1, detail="HTTP 500")
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, T2, detail="HTTP 502")
    by_url = {c.url: c for c in store.select_candidates(query())}
    x, web = by_url[U_X], by_url[U_WEB]
    assert (x.address, x.status, x.attempts, x.checked_at, x.platform, x.detail) == (
        "Mint1", FetchStatus.ERROR, 2, T2, "x", "HTTP 502",
    )
    assert (web.status, web.attempts, web.checked_at, web.platform, web.detail) == (
        FetchStatus.PENDING, 0, None, "web", None,
    )


def test_candidates_respect_the_back_off_cutoff(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X, U_TG, U_WEB]), now=T0)
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, T1)
    record_call(store, "Mint1", U_TG, FetchStatus.ERROR, T2)
    assert keys(store, query(recorded_by=T1 - timedelta(milliseconds=1))) == [("Mint1", U_WEB)]
    assert keys(store, query(recorded_by=T1)) == [("Mint1", U_WEB), ("Mint1", U_X)]  # inclusive
    assert keys(store, query(recorded_by=T2)) == [("Mint1", U_WEB), ("Mint1", U_X), ("Mint1", U_TG)]
    among = query(recorded_by=T1, addresses=("Mint1",))
    assert keys(store, among) == [("Mint1", U_WEB), ("Mint1", U_X)]


def test_candidates_by_status_and_limit(store: Store) -> None:
    for i, status in enumerate([FetchStatus.ERROR, FetchStatus.NOT_FOUND, FetchStatus.EXHAUSTED,
                                FetchStatus.BLOCKED, FetchStatus.INVALID, FetchStatus.OK]):
        address = f"S{i}"
        store.create_pending_token(profile(address, urls=[U_X]), now=T0)
        record_call(store, address, U_X, status, T1 + timedelta(seconds=i))
    store.create_pending_token(profile("P", urls=[U_X]), now=T0)
    assert keys(store, query({FetchStatus.ERROR})) == [("S0", U_X)]
    assert keys(store, query({FetchStatus.NOT_FOUND, FetchStatus.BLOCKED})) == [("S1", U_X), ("S3", U_X)]
    assert keys(store, query({FetchStatus.PENDING, FetchStatus.INVALID})) == [("P", U_X), ("S4", U_X)]
    assert keys(store, query({FetchStatus.SKIPPED_PAID})) == []
    everything = keys(store, query())
    assert everything == [("P", U_X), ("S0", U_X), ("S1", U_X), ("S2", U_X), ("S3", U_X), ("S4", U_X)]
    assert ("S5", U_X) not in everything  # ok is never a candidate
    assert keys(store, query(limit=2)) == everything[:2]
    assert keys(store, query(frozenset())) == []


def test_candidates_among_addresses(store: Store) -> None:
    store.create_pending_token(profile("A", urls=[U_X, U_TG]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X]), now=T0)
    store.create_pending_token(profile("C", urls=[U_X]), now=T0)
    record_call(store, "A", U_X, FetchStatus.OK, T1)
    record_call(store, "B", U_X, FetchStatus.ERROR, T1)
    assert keys(store, query(addresses=("C", "A"))) == [("A", U_TG), ("C", U_X)]
    assert keys(store, query(addresses=("B", "B", "Z9"))) == [("B", U_X)]
    assert keys(store, query({FetchStatus.ERROR}, addresses=("A", "C"))) == []
    assert keys(store, query(addresses=())) == []
    assert keys(store, query(addresses=("A", "B", "C"), limit=2)) == [("A", U_TG), ("C", U_X)]


def _unsupported_mix(store: Store) -> None:
    store.create_pending_token(profile("A", urls=[U_X, U_GH, U_WEB, U_TG]), now=T0)
    record_no_call(store, "A", U_X, FetchStatus.UNSUPPORTED, T1, cause=Cause.NO_GENERATOR)
    record_no_call(store, "A", U_GH, FetchStatus.UNSUPPORTED, T1, cause=Cause.NO_GENERATOR)
    record_no_call(store, "A", U_WEB, FetchStatus.UNSUPPORTED, T1, cause=Cause.UNPARSEABLE)
    record_no_call(store, "A", U_TG, FetchStatus.ERROR, T1, cause=Cause.CREDIT_EXHAUSTED)


def test_unsupported_candidates_are_narrowed_by_platform_and_cause(store: Store) -> None:
    _unsupported_mix(store)
    unsupported = {FetchStatus.UNSUPPORTED}
    assert keys(store, query(unsupported)) == [("A", U_WEB), ("A", U_GH), ("A", U_X)]
    narrowed = query(unsupported, unsupported_platforms=frozenset({"x", "web"}))
    assert keys(store, narrowed) == [("A", U_X)]  # web's element is unparseable: no generator helps
    assert keys(store, query(unsupported, unsupported_platforms=frozenset())) == []
    both = query({FetchStatus.UNSUPPORTED, FetchStatus.ERROR}, unsupported_platforms=frozenset({"github"}))
    assert keys(store, both) == [("A", U_GH), ("A", U_TG)]  # other statuses are not narrowed
    among = query({FetchStatus.UNSUPPORTED, FetchStatus.ERROR}, addresses=("A",),
                  unsupported_platforms=frozenset({"github", "web"}))
    assert keys(store, among) == [("A", U_GH), ("A", U_TG)]


def test_held_back_counts_the_selections_elements_still_inside_their_back_off(store: Store) -> None:
    store.create_pending_token(profile("A", urls=[U_X, U_TG, U_WEB]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X, U_GH]), now=T0)  # B's GitHub never recorded
    record_call(store, "A", U_X, FetchStatus.ERROR, T1)
    record_call(store, "A", U_TG, FetchStatus.ERROR, T2)
    record_call(store, "B", U_X, FetchStatus.NOT_FOUND, T2)
    record_call(store, "A", U_WEB, FetchStatus.OK, T2)
    errors = {FetchStatus.ERROR}
    assert store.count_held_back(query(errors, recorded_by=T1), 50) == 1  # T1 itself is due
    assert store.count_held_back(query(errors, recorded_by=T0), 50) == 2
    assert store.count_held_back(query(errors, recorded_by=T2), 50) == 0
    three = query({FetchStatus.ERROR, FetchStatus.NOT_FOUND, FetchStatus.PENDING}, recorded_by=T0)
    assert store.count_held_back(three, 50) == 3  # a never-recorded element is always due
    assert store.count_held_back(three, 2) == 2
    assert store.count_held_back(three, 0) == 0
    among = query({FetchStatus.ERROR, FetchStatus.NOT_FOUND}, recorded_by=T0, addresses=("B", "B", "Z9"))
    assert store.count_held_back(among, 50) == 1
    assert store.count_held_back(query(errors, recorded_by=T0, addresses=("A", "B")), 1) == 1
    assert store.count_held_back(query(errors, recorded_by=T0, addresses=()), 50) == 0


def test_held_back_narrows_unsupported_like_the_selection(store: Store) -> None:
    _unsupported_mix(store)
    unsupported = {FetchStatus.UNSUPPORTED}
    assert store.count_held_back(query(unsupported, recorded_by=T0), 50) == 3
    narrowed = query(unsupported, recorded_by=T0, unsupported_platforms=frozenset({"x", "web"}))
    assert store.count_held_back(narrowed, 50) == 1  # web's element is unparseable: no generator helps
    assert store.count_held_back(query(unsupported, recorded_by=T0, unsupported_platforms=frozenset()), 50) == 0
    both = query({FetchStatus.UNSUPPORTED, FetchStatus.ERROR}, recorded_by=T0,
                 unsupported_platforms=frozenset({"github"}))
    assert store.count_held_back(both, 50) == 2  # other statuses are not narrowed
    among = query({FetchStatus.UNSUPPORTED, FetchStatus.ERROR}, recorded_by=T0, addresses=("A",),
                  unsupported_platforms=frozenset({"github", "web"}))
    assert store.count_held_back(among, 50) == 2


def test_holders_of_a_url_by_address_up_to_the_limit(store: Store) -> None:
    for address in ("C", "A", "B"):
        store.create_pending_token(profile(address, urls=[U_X, U_TG]), now=T0)
    store.create_pending_token(profile("D", urls=[U_TG]), now=T0)
    record_call(store, "B", U_X, FetchStatus.ERROR, T1, detail="HTTP 503")
    holders = store.find_holders(U_X, 10)
    assert [address for address, _ in holders] == ["A", "B", "C"]
    assert [(el.url, el.status, el.attempts) for _, el in holders] == [
        (U_X, FetchStatus.PENDING, 0), (U_X, FetchStatus.ERROR, 1), (U_X, FetchStatus.PENDING, 0)]
    assert holders[1][1] == store.find_element("B", U_X)
    assert [address for address, _ in store.find_holders(U_X, 2)] == ["A", "B"]
    assert [address for address, _ in store.find_holders(U_TG, 10)] == ["A", "B", "C", "D"]
    assert store.find_holders(U_X, 0) == []
    assert store.find_holders("https://x.com/i/status/404", 10) == []


def test_a_non_canonical_element_is_left_to_the_health_views(store: Store) -> None:
    """An element whose URL is not canonical (our bug upstream) has no platform: no retry can change it,
    so the retry selection skips it; the health views still show it."""
    odd = "https://www.youtube.com/@coin"  # the canonical form drops "www."
    store.create_pending_token(profile("A", urls=[odd, U_X]), now=T0)
    record_no_call(store, "A", odd, FetchStatus.ERROR, T1, detail="not a canonical URL")
    assert keys(store, query()) == [("A", U_X)]
    assert keys(store, query(addresses=("A",))) == [("A", U_X)]
    assert [(c.url, c.platform) for c in store.oldest_elements([FetchStatus.ERROR], 10)] == [(odd, None)]
    assert store.status_counts().by_platform[("unknown", FetchStatus.ERROR)] == 1


# ----------------------------------------------------------------------------- health views


def test_status_counts_by_platform_and_status(store: Store) -> None:
    assert store.status_counts().urls == 0 and store.status_counts().tokens == 0
    store.create_pending_token(profile("A", urls=[U_X, U_TG, U_WEB]), now=T0)
    store.create_pending_token(profile("B", urls=[U_X, "https://x.com/coin"]), now=T0)
    store.create_pending_token(profile("C", urls=[]), now=T0)
    record_call(store, "A", U_X, FetchStatus.OK, T1)
    record_call(store, "B", "https://x.com/coin", FetchStatus.ERROR, T1)
    record_no_call(store, "A", U_WEB, FetchStatus.SKIPPED_PAID, T1, cause=Cause.PAID_DISABLED)
    counts = store.status_counts()
    assert dict(counts.by_platform) == {
        ("x", FetchStatus.OK): 1,
        ("x", FetchStatus.PENDING): 1,
        ("x", FetchStatus.ERROR): 1,
        ("telegram", FetchStatus.PENDING): 1,
        ("web", FetchStatus.SKIPPED_PAID): 1,
    }
    assert counts.tokens == 3 and counts.urls == 5
    by_status = counts.by_status()
    assert by_status[FetchStatus.PENDING] == 2 and by_status[FetchStatus.EXHAUSTED] == 0
    assert sum(by_status.values()) == 5 and set(by_status) == set(FetchStatus)


def test_oldest_elements(store: Store) -> None:
    store.create_pending_token(profile("B", urls=[U_X, U_TG]), now=T0)
    store.create_pending_token(profile("A", urls=[U_X, U_WEB]), now=T0)
    record_call(store, "B", U_X, FetchStatus.EXHAUSTED, T2)
    record_call(store, "A", U_X, FetchStatus.EXHAUSTED, T1)
    record_call(store, "A", U_WEB, FetchStatus.OK, T0)
    pending = [FetchStatus.PENDING]
    assert [(c.address, c.url, c.checked_at) for c in store.oldest_elements(pending, 10)] == [("B", U_TG, None)]
    exhausted = store.oldest_elements([FetchStatus.EXHAUSTED, FetchStatus.PENDING], 10)
    assert [(c.address, c.url) for c in exhausted] == [("B", U_TG), ("A", U_X), ("B", U_X)]
    assert [(c.address, c.url) for c in store.oldest_elements([FetchStatus.EXHAUSTED], 1)] == [("A", U_X)]
    before = store.oldest_elements([FetchStatus.EXHAUSTED], 10,
                                   due_by=T2 - timedelta(milliseconds=1) + DEFAULT_MIN_INTERVAL)
    assert [(c.address, c.url) for c in before] == [("A", U_X)]
    ok = store.oldest_elements([FetchStatus.OK], 10)  # a health view may look at ok too
    assert [(c.address, c.url, c.status) for c in ok] == [("A", U_WEB, FetchStatus.OK)]
    assert store.oldest_elements([FetchStatus.EXHAUSTED], 0) == []
    assert store.oldest_elements([], 10) == []


# ----------------------------------------------------------------------------- unresolved raw values


RAW_TW = UnresolvedValue(field="twitter", value="https://t.co/abc", reason="timeout", attempts=1)
RAW_WEB = UnresolvedValue(field="website", value="https://bit.ly/x", reason="HTTP 503", attempts=1, checked_at=T1)


def test_add_resolved_url_joins_the_token_as_pending_and_drops_the_raw_value(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X, U_TG], unresolved=(RAW_TW, RAW_WEB)), now=T0)
    assert store.add_resolved_url("Mint1", "website", U_WEB, 3, T2) is WriteResult.APPLIED
    doc = store.find_token("Mint1")
    assert doc is not None
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]  # appended at the end
    el = doc.element(U_WEB)
    assert el is not None and (el.status, el.attempts, el.checked_at, el.fence) == (FetchStatus.PENDING, 0, None, 0)
    assert doc.unresolved == [RAW_TW]
    assert (doc.fence, doc.updated_at) == (3, T2)
    assert ("Mint1", U_WEB) in keys(store, query({FetchStatus.PENDING}))
    assert ("web", FetchStatus.PENDING) in store.status_counts().by_platform
    # A value resolving to a URL the token already holds adds no second element.
    assert store.add_resolved_url("Mint1", "twitter", U_X, 3, T2) is WriteResult.APPLIED
    doc = store.find_token("Mint1")
    assert doc is not None and [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB] and doc.unresolved == []


def test_unresolved_writes_are_fenced_by_the_token_lock(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X], unresolved=(RAW_TW, RAW_WEB)), now=T0)
    assert store.update_unresolved("Mint1", RAW_TW.model_copy(update={"attempts": 2}), 5) is WriteResult.APPLIED
    before = store.find_token("Mint1")
    assert before is not None and before.fence == 5
    assert store.add_resolved_url("Mint1", "website", U_WEB, 4, T2) is WriteResult.FENCED
    assert store.update_unresolved("Mint1", RAW_WEB, 4, drop=True) is WriteResult.FENCED
    assert store.update_unresolved("Mint1", RAW_TW.model_copy(update={"attempts": 9}), 4) is WriteResult.FENCED
    assert store.find_token("Mint1") == before
    assert store.add_resolved_url("Nope", "website", U_WEB, 9, T2) is WriteResult.NO_ELEMENT
    assert store.update_unresolved("Nope", RAW_WEB, 9) is WriteResult.NO_ELEMENT
    assert store.find_token("Nope") is None and store.find_element("Nope", U_WEB) is None
    # The URL lock's fences are another sequence: an element write does not move the token's fence.
    record_call(store, "Mint1", U_X, FetchStatus.ERROR, T1, fence=100)
    doc = store.find_token("Mint1")
    assert doc is not None and doc.fence == 5
    assert store.update_unresolved("Mint1", RAW_WEB, 5, drop=True) is WriteResult.APPLIED


def test_update_unresolved_round_trips_and_drops(store: Store) -> None:
    store.create_pending_token(profile(urls=[], unresolved=(RAW_TW, RAW_WEB)), now=T0)
    later = RAW_TW.model_copy(update={"attempts": 2, "reason": "HTTP 502", "checked_at": T2})
    assert store.update_unresolved("Mint1", later, 1) is WriteResult.APPLIED
    doc = store.find_token("Mint1")
    assert doc is not None and sorted(doc.unresolved, key=lambda v: v.field) == [later, RAW_WEB]
    assert store.update_unresolved("Mint1", RAW_WEB, 1, drop=True) is WriteResult.APPLIED
    doc = store.find_token("Mint1")
    assert doc is not None and doc.unresolved == [later]
    new = UnresolvedValue(field="telegram", value="https://tinyurl.com/q", reason="timeout", checked_at=T1)
    assert store.update_unresolved("Mint1", new, 1) is WriteResult.APPLIED  # a new raw value is added
    doc = store.find_token("Mint1")
    assert doc is not None and sorted(doc.unresolved, key=lambda v: v.field) == [new, later]


def test_token_unresolved_values_read_back_in_one_order(store: Store) -> None:
    """By field, whatever order they were written in (the backends must agree)."""
    store.create_pending_token(profile(urls=[], unresolved=(RAW_WEB, RAW_TW)), now=T0)
    doc = store.find_token("Mint1")
    assert doc is not None and [v.field for v in doc.unresolved] == ["twitter", "website"]
    store.update_unresolved("Mint1", RAW_TW.model_copy(update={"attempts": 3}), 1)
    doc = store.find_token("Mint1")
    assert doc is not None and [v.field for v in doc.unresolved] == ["twitter", "website"]


def test_select_unresolved_oldest_first_with_cutoff_and_limit(store: Store) -> None:
    # Created so that insertion order is not the due order.
    store.create_pending_token(profile("A", urls=[], unresolved=(RAW_WEB,)), now=T0)  # checked T1
    store.create_pending_token(
        profile("B", urls=[], unresolved=(RAW_TW.model_copy(update={"checked_at": T2}),)), now=T0
    )
    store.create_pending_token(profile("C", urls=[], unresolved=(RAW_TW,)), now=T0)  # never checked
    store.create_pending_token(
        profile("D", urls=[], unresolved=(RAW_TW.model_copy(update={"checked_at": T0}), RAW_WEB)), now=T0
    )
    due = store.select_unresolved(T3, 10)
    assert [(a, v.field, v.checked_at) for a, v in due] == [
        ("C", "twitter", None),
        ("D", "twitter", T0),
        ("A", "website", T1),
        ("D", "website", T1),
        ("B", "twitter", T2),
    ]
    assert due[0][1] == RAW_TW
    assert [(a, v.field) for a, v in store.select_unresolved(T3, 2)] == [("C", "twitter"), ("D", "twitter")]
    assert [(a, v.field) for a, v in store.select_unresolved(T1 - timedelta(milliseconds=1), 10)] == [
        ("C", "twitter"), ("D", "twitter"),
    ]
    assert store.select_unresolved(T3, 0) == [] and store.select_unresolved(T3, -1) == []
    store.update_unresolved("C", RAW_TW, 1, drop=True)
    assert [a for a, _v in store.select_unresolved(T0, 10)] == ["D"]


def test_select_unresolved_limit_finds_a_token_whose_oldest_value_is_not_its_first(store: Store) -> None:
    """The limited query orders tokens by their oldest raw value (a server sorts an array field by its
    smallest element), whatever order the profile listed the values in."""
    store.create_pending_token(
        profile("A", urls=[], unresolved=(RAW_WEB.model_copy(update={"checked_at": T2}),
                                          RAW_TW.model_copy(update={"checked_at": T0}))),
        now=T0,
    )
    store.create_pending_token(profile("B", urls=[], unresolved=(RAW_WEB,)), now=T0)  # checked T1
    assert [(a, v.field) for a, v in store.select_unresolved(T3, 1)] == [("A", "twitter")]
    assert [(a, v.field) for a, v in store.select_unresolved(T3, 2)] == [("A", "twitter"), ("B", "website")]


# ----------------------------------------------------------------------------- objects, metrics


def test_upsert_object_never_overwrites_and_returns_the_same_id(store: Store) -> None:
    published = datetime(2025, 2, 1, 8, 30, 0, 250000, tzinfo=UTC)
    first = store.upsert_object(ObjectKind.CONTENT, obj(text="first", published_at=published), now=T0)
    assert isinstance(first, str) and first
    second = store.upsert_object(ObjectKind.CONTENT, obj(text="second"), now=T2)
    assert second == first
    assert store.count_objects(ObjectKind.CONTENT) == 1

    row = store.get_object(ObjectKind.CONTENT, first)
    assert row == {
        "id": first,
        "platform": "x",
        "platform_key": "tweet:1",
        "subtype": "tweet",
        "fields": {"text": "first", "published_at": published},
        "outbound_urls": ["https://coin.example"],
        "media_urls": ["https://pbs.twimg.com/media/A.jpg?name=orig"],
        "avatar_url": "https://pbs.twimg.com/profile/a.png",
        "icon_url": None,
        "created_at": T0,
    }
    assert row["created_at"].tzinfo is not None


def test_objects_are_unique_per_collection_not_across(store: Store) -> None:
    content = store.upsert_object(ObjectKind.CONTENT, obj("k"), now=T0)
    account = store.upsert_object(ObjectKind.ACCOUNT, obj("k"), now=T0)
    other = store.upsert_object(ObjectKind.CONTENT, obj("k2"), now=T0)
    assert len({content, other}) == 2
    assert store.count_objects(ObjectKind.CONTENT) == 2
    assert store.count_objects(ObjectKind.ACCOUNT) == 1
    assert store.count_objects(ObjectKind.VENUE) == 0
    got = store.get_object(ObjectKind.ACCOUNT, account)
    assert got is not None and got["platform_key"] == "k"


def test_get_object_of_unknown_or_malformed_id_is_none(store: Store) -> None:
    real = store.upsert_object(ObjectKind.VENUE, obj("v"), now=T0)
    assert store.get_object(ObjectKind.VENUE, real) is not None
    assert store.get_object(ObjectKind.CONTENT, real) is None  # ids are per collection
    for bad in ("", "not-an-id", "ffffffffffffffffffffffff", "999999"):
        assert store.get_object(ObjectKind.VENUE, bad) is None


def test_unknown_object_kind_is_rejected(store: Store) -> None:
    with pytest.raises(ValueError, match="post"):
        store.upsert_object("post", obj())  # type: ignore[arg-type]


def test_record_first_metrics_keeps_the_first_point(store: Store) -> None:
    oid = store.upsert_object(ObjectKind.CONTENT, obj(), now=T0)
    store.record_first_metrics(ObjectKind.CONTENT, oid, {"likes": 3, "views": 10.5}, T0)
    store.record_first_metrics(ObjectKind.CONTENT, oid, {"likes": 99, "replies": 2}, T1)
    assert store.find_metrics(ObjectKind.CONTENT, oid) == {"likes": 3.0, "views": 10.5, "replies": 2.0}
    assert store.find_metrics(ObjectKind.ACCOUNT, oid) == {}  # per (kind, object)
    store.record_first_metrics(ObjectKind.CONTENT, oid, {}, T2)  # nothing to record is fine
    assert store.find_metrics(ObjectKind.CONTENT, "other") == {}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "12", None])
def test_record_first_metrics_rejects_a_non_finite_value(store: Store, bad: object) -> None:
    with pytest.raises(ValueError, match=r"'likes'"):
        store.record_first_metrics(ObjectKind.CONTENT, "o1", {"views": 1.0, "likes": bad}, T0)  # type: ignore[dict-item]
    assert store.find_metrics(ObjectKind.CONTENT, "o1") == {}  # nothing half-written


def test_a_graph_with_a_bad_metric_writes_nothing(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X]), now=T0)
    bad = planned("tweet:bad")
    bad = type(bad)(kind=bad.kind, obj=bad.obj.model_copy(update={"metrics": {"likes": float("nan")}}), depth=0)
    with pytest.raises(ValueError, match="likes"):
        store.apply_url_write(url_write("Mint1", U_X, next_fence(), FetchStatus.OK, T1, links=[bad]))
    el = store.find_element("Mint1", U_X)
    assert el is not None and el.status is FetchStatus.PENDING
    assert store.find_links("Mint1", U_X) == [] and store.find_url_state(U_X) is None
