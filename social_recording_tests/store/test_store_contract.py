"""The Store contract (store/base.py docstrings), run on every backend by the `store` fixture."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenLink, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import Store
from social_recording_tests.store.conftest import Backend, seed_web_and_fingerprints

# Millisecond-precise instants: BSON keeps milliseconds, and the contract is exact equality.
T0 = datetime(2025, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
T2 = T0 + timedelta(hours=2)
KST = timezone(timedelta(hours=9))

U_X = "https://x.com/i/status/1"
U_TG = "https://t.me/coin"
U_WEB = "https://coin.example"


def profile(
    address: str = "Mint1", symbol: str | None = "COIN", urls: list[str] | None = None
) -> TokenProfile:
    return TokenProfile(
        address=address,
        symbol=symbol,
        image="https://img.example/coin.png",
        first_transfer_at=T0 - timedelta(days=1),
        urls=[U_X, U_TG, U_WEB] if urls is None else urls,
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


def link(token: str, entry: str, kind: ObjectKind, object_id: str, depth: int) -> TokenLink:
    return TokenLink(
        token_address=token,
        object=kind,
        object_id=object_id,
        entry_url=entry,
        platform="x",
        subtype="tweet",
        link_depth=depth,
        created_at=T1,
    )


# ----------------------------------------------------------------------------- protocol, tokens


def test_backend_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_find_token_of_unknown_address_is_none(store: Store) -> None:
    assert store.find_token("nope") is None


def test_create_pending_token_stores_every_url_pending(store: Store) -> None:
    assert store.create_pending_token(profile(), now=T0) is True

    doc = store.find_token("Mint1")
    assert doc is not None
    assert (doc.address, doc.symbol, doc.image) == ("Mint1", "COIN", "https://img.example/coin.png")
    assert doc.first_transfer_at == T0 - timedelta(days=1)
    assert doc.fingerprints == [] and doc.web is None
    assert doc.created_at == T0 and doc.updated_at == T0
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]  # order kept
    for el in doc.social_urls:
        assert (el.status, el.attempted_at, el.attempts) == (FetchStatus.PENDING, None, 0)


def test_datetimes_round_trip_tz_aware_utc(store: Store) -> None:
    local = datetime(2025, 3, 1, 21, 0, 0, 500000, tzinfo=KST)  # == 12:00:00.5 UTC
    store.create_pending_token(TokenProfile(address="Mint1", first_transfer_at=local, urls=[U_X]), now=local)
    store.record_url_result("Mint1", U_X, FetchStatus.ERROR, local)
    doc = store.find_token("Mint1")
    assert doc is not None
    el = doc.element(U_X)
    assert el is not None and el.attempted_at is not None
    for value in (doc.first_transfer_at, doc.created_at, el.attempted_at):
        assert value is not None
        assert value.tzinfo is not None and value.utcoffset() == timedelta(0)
        assert value == local
    naive = datetime(2025, 1, 2, 3, 4, 5, 6000)  # naive input is taken as UTC
    store.create_pending_token(TokenProfile(address="Mint2", urls=[]), now=naive)
    doc2 = store.find_token("Mint2")
    assert doc2 is not None and doc2.created_at == naive.replace(tzinfo=UTC)


def test_create_pending_token_is_insert_only(store: Store) -> None:
    assert store.create_pending_token(profile(), now=T0) is True
    store.record_url_result("Mint1", U_X, FetchStatus.OK, T1)
    before = store.find_token("Mint1")

    again = profile(symbol="OTHER", urls=["https://x.com/other", U_X])
    assert store.create_pending_token(again, now=T2) is False

    after = store.find_token("Mint1")
    assert after == before  # symbol, urls, statuses, timestamps: nothing changed
    assert after is not None and after.symbol == "COIN"


def test_create_pending_token_drops_duplicate_urls(store: Store) -> None:
    store.create_pending_token(profile(urls=[U_X, U_TG, U_X, U_WEB, U_TG]), now=T0)
    doc = store.find_token("Mint1")
    assert doc is not None
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]


@pytest.mark.parametrize("bad", ["", "   "])
def test_create_pending_token_rejects_an_empty_url_and_stores_nothing(store: Store, bad: str) -> None:
    with pytest.raises(ValueError, match=r"Mint1.*non-empty"):
        store.create_pending_token(profile(urls=[U_X, bad]), now=T0)
    assert store.find_token("Mint1") is None


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


def test_find_existing_addresses_handles_long_lists(store: Store) -> None:
    for i in range(0, 1200, 100):
        store.create_pending_token(profile(f"T{i:05d}", urls=[]), now=T0)
    asked = [f"T{i:05d}" for i in range(1200)]
    assert store.find_existing_addresses(asked) == {f"T{i:05d}" for i in range(0, 1200, 100)}
    # Candidate queries narrowed by a long address list (chunked IN-lists on SQLite).
    for address in ("T00050", "Z1", "T00900x"):
        store.create_pending_token(profile(address, urls=[U_X]), now=T0)
    pending = [FetchStatus.PENDING]
    got = store.find_tokens_by_url_statuses(pending, addresses=list(reversed(asked)), limit=5)
    assert [d.address for d in got] == ["T00050"]
    got = store.find_tokens_by_url_statuses(pending, addresses=[*asked, "T00900x"], limit=2)
    assert [d.address for d in got] == ["T00050", "T00900x"]


# ----------------------------------------------------------------------------- record_url_result


def test_record_url_result_touches_only_that_element(backend: Backend) -> None:
    store = backend.store
    store.create_pending_token(profile(), now=T0)
    web = {"domain": "coin.example", "scan_time": T0}
    seed_web_and_fingerprints(backend, "Mint1", web, ["favicon:abc", "title:coin"])

    assert store.record_url_result("Mint1", U_TG, FetchStatus.ERROR, T1) is True

    doc = store.find_token("Mint1")
    assert doc is not None
    tg = doc.element(U_TG)
    assert tg is not None and (tg.status, tg.attempted_at, tg.attempts) == (FetchStatus.ERROR, T1, 1)
    for other in (U_X, U_WEB):
        el = doc.element(other)
        assert el is not None and (el.status, el.attempted_at, el.attempts) == (FetchStatus.PENDING, None, 0)
    assert doc.fingerprints == ["favicon:abc", "title:coin"]
    assert doc.web == web
    assert (doc.symbol, doc.image, doc.created_at) == ("COIN", "https://img.example/coin.png", T0)
    assert [u.url for u in doc.social_urls] == [U_X, U_TG, U_WEB]
    assert doc.updated_at is not None and doc.updated_at > T0


def test_record_url_result_counts_attempts_only_when_attempted(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    assert store.record_url_result("Mint1", U_X, FetchStatus.ERROR, T1)
    assert store.record_url_result("Mint1", U_X, FetchStatus.ERROR, T2)
    # A zero-call outcome (reuse, skipped_paid, lock wait): status only; the TTL clock stays put.
    assert store.record_url_result("Mint1", U_X, FetchStatus.SKIPPED_PAID, None)
    doc = store.find_token("Mint1")
    assert doc is not None
    el = doc.element(U_X)
    assert el is not None
    assert (el.status, el.attempted_at, el.attempts) == (FetchStatus.SKIPPED_PAID, T2, 2)


def test_record_url_result_for_unknown_url_or_token_changes_nothing(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    before = store.find_token("Mint1")
    assert store.record_url_result("Mint1", "https://x.com/unknown", FetchStatus.OK, T1) is False
    assert store.record_url_result("NoSuchMint", U_X, FetchStatus.OK, T1) is False
    assert store.find_token("Mint1") == before
    assert store.find_token("NoSuchMint") is None


def test_record_url_result_rejects_an_unknown_status(store: Store) -> None:
    store.create_pending_token(profile(), now=T0)
    with pytest.raises(ValueError, match="bogus"):
        store.record_url_result("Mint1", U_X, "bogus", T1)  # type: ignore[arg-type]
    doc = store.find_token("Mint1")
    assert doc is not None
    el = doc.element(U_X)
    assert el is not None and el.status == FetchStatus.PENDING and el.attempts == 0


# ----------------------------------------------------------------------------- candidate queries


def _three_tokens(store: Store) -> None:
    store.create_pending_token(profile("C3", urls=[U_X, U_WEB]), now=T0)
    store.create_pending_token(profile("A1", urls=[U_X, U_TG]), now=T0)
    store.create_pending_token(profile("B2", urls=[U_TG]), now=T0)
    store.record_url_result("A1", U_X, FetchStatus.OK, T1)
    store.record_url_result("A1", U_TG, FetchStatus.ERROR, T1)
    store.record_url_result("B2", U_TG, FetchStatus.OK, T1)
    store.record_url_result("C3", U_X, FetchStatus.SKIPPED_PAID, None)
    # C3/U_WEB stays pending


def test_find_tokens_by_url_statuses(store: Store) -> None:
    _three_tokens(store)
    got = store.find_tokens_by_url_statuses({FetchStatus.ERROR, FetchStatus.PENDING})
    assert [d.address for d in got] == ["A1", "C3"]  # ordered by address
    a1 = got[0]
    assert a1.symbol == "COIN" and a1.created_at == T0  # whole documents
    assert [u.status for u in a1.social_urls] == [FetchStatus.OK, FetchStatus.ERROR]

    assert [d.address for d in store.find_tokens_by_url_statuses([FetchStatus.OK])] == ["A1", "B2"]
    assert store.find_tokens_by_url_statuses([FetchStatus.EXHAUSTED]) == []
    assert store.find_tokens_by_url_statuses([]) == []


def test_find_tokens_by_url_statuses_orders_by_address_across_statuses(store: Store) -> None:
    """Index order is (status, address); the result order must still be address order."""
    for address, status in [("D", FetchStatus.ERROR), ("C", None), ("B", FetchStatus.ERROR), ("A", None)]:
        store.create_pending_token(profile(address, urls=[U_X]), now=T0)
        if status is not None:
            store.record_url_result(address, U_X, status, T1)
    wanted = [FetchStatus.ERROR, FetchStatus.PENDING]
    assert [d.address for d in store.find_tokens_by_url_statuses(wanted, limit=2)] == ["A", "B"]
    assert [d.address for d in store.find_tokens_by_url_statuses(wanted)] == ["A", "B", "C", "D"]


def test_find_tokens_by_url_statuses_among_addresses_and_limit(store: Store) -> None:
    _three_tokens(store)
    ok = [FetchStatus.OK]
    assert [d.address for d in store.find_tokens_by_url_statuses(ok, addresses=["B2", "C3"])] == ["B2"]
    assert store.find_tokens_by_url_statuses(ok, addresses=["Z9"]) == []
    assert store.find_tokens_by_url_statuses(ok, addresses=[]) == []
    many = [FetchStatus.OK, FetchStatus.PENDING, FetchStatus.SKIPPED_PAID]
    assert [d.address for d in store.find_tokens_by_url_statuses(many, limit=2)] == ["A1", "B2"]
    among = store.find_tokens_by_url_statuses(many, addresses=["C3", "A1", "B2"], limit=2)
    assert [d.address for d in among] == ["A1", "B2"]
    assert store.find_tokens_by_url_statuses(many, limit=0) == []
    with pytest.raises(ValueError, match="-1"):
        store.find_tokens_by_url_statuses(many, limit=-1)


def test_find_tokens_by_social_urls_projects_address_and_all_elements(store: Store) -> None:
    _three_tokens(store)
    got = store.find_tokens_by_social_urls([U_TG, "https://x.com/nobody"])
    assert [d.address for d in got] == ["A1", "B2"]
    a1 = got[0]
    # Elements are not filtered: the caller picks them (a multikey index does not filter arrays).
    assert [(u.url, u.status, u.attempts) for u in a1.social_urls] == [
        (U_X, FetchStatus.OK, 1),
        (U_TG, FetchStatus.ERROR, 1),
    ]
    assert a1.symbol is None and a1.created_at is None  # projection: address + social_urls only
    assert [d.address for d in store.find_tokens_by_social_urls([U_X, U_WEB])] == ["A1", "C3"]
    assert store.find_tokens_by_social_urls([]) == []


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


# ----------------------------------------------------------------------------- token_links


def test_append_find_delete_links(store: Store) -> None:
    c = store.upsert_object(ObjectKind.CONTENT, obj("c"), now=T0)
    a = store.upsert_object(ObjectKind.ACCOUNT, obj("a"), now=T0)
    q = store.upsert_object(ObjectKind.CONTENT, obj("q"), now=T0)
    mine = [
        link("Mint1", U_X, ObjectKind.CONTENT, q, 1),
        link("Mint1", U_X, ObjectKind.ACCOUNT, a, 0),
        link("Mint1", U_X, ObjectKind.CONTENT, c, 0),
    ]
    store.append_links(mine)
    store.append_links([link("Mint1", U_TG, ObjectKind.CONTENT, c, 0)])
    store.append_links([link("Mint2", U_X, ObjectKind.CONTENT, c, 0)])
    store.append_links([])

    got = store.find_links("Mint1", U_X)
    assert [(lk.link_depth, lk.object, lk.object_id) for lk in got] == [
        (0, ObjectKind.ACCOUNT, a),
        (0, ObjectKind.CONTENT, c),
        (1, ObjectKind.CONTENT, q),
    ]
    assert sorted(got, key=lambda lk: lk.shape()) == sorted(mine, key=lambda lk: lk.shape())
    assert got == sorted(mine, key=lambda lk: (lk.link_depth, lk.object.value, lk.object_id))
    assert all(lk.created_at == T1 and lk.created_at.tzinfo is not None for lk in got)

    assert store.delete_links("Mint1", U_X) == 3
    assert store.find_links("Mint1", U_X) == []
    assert store.delete_links("Mint1", U_X) == 0
    assert len(store.find_links("Mint1", U_TG)) == 1  # other entry URL untouched
    assert len(store.find_links("Mint2", U_X)) == 1  # other token untouched


def test_links_have_no_unique_constraint(store: Store) -> None:
    """Seed 004 §1.5: duplicates are prevented by delete-then-append, not by an index."""
    one = link("Mint1", U_X, ObjectKind.CONTENT, "obj-1", 0)
    store.append_links([one, one])
    assert len(store.find_links("Mint1", U_X)) == 2
