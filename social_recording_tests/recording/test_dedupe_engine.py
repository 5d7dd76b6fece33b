"""The dedupe gate inside the engine: equivalence, TTL, the clock never advancing by itself, one bill
per shared answer."""

from __future__ import annotations

from datetime import datetime, timedelta

from social_recording.domain.models import SocialUrl, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.locks.base import LockManager
from social_recording.recording.outcomes import UrlOutcome
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    T0,
    TG_URL,
    X_URL,
    Behaviour,
    Engine,
    MemoryCounter,
    StepClock,
    build_engine,
    counting_registry,
    seed_result,
)


def _token(store: SqliteStore, address: str, urls: list[str]) -> None:
    assert store.create_pending_token(TokenProfile(address=address, symbol=address, urls=urls), T0)


def _el(store: SqliteStore, address: str, url: str) -> SocialUrl:
    doc = store.find_token(address)
    assert doc is not None
    el = doc.element(url)
    assert el is not None
    return el


def _record(clock: StepClock, eng: Engine, address: str, url: str, at: datetime) -> UrlOutcome:
    clock.set(at)
    return eng.recorder.record_url((address, None), url, RunState())


def test_equivalence_reuse_path_writes_exactly_the_generator_paths_links(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """The principle of the reuse path, tested directly: same URL, token A through the generator,
    token B through reuse -> identical token_links but for token_address (and created_at)."""
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    for t in ("A", "B", "C"):
        _token(store, t, [X_URL])
    a = _record(clock, eng, "A", X_URL, T0)
    b = _record(clock, eng, "B", X_URL, T0 + timedelta(hours=1))
    assert a.status is FetchStatus.OK and not a.reused and a.attempted
    assert b.status is FetchStatus.OK and b.reused and not b.attempted
    assert counter.get(X_URL) == 1
    a_links, b_links = store.find_links("A", X_URL), store.find_links("B", X_URL)
    assert a_links and [x.shape() for x in a_links] == [x.shape() for x in b_links]
    assert {x.token_address for x in b_links} == {"B"}
    # a third token copies from ONE source: exactly as many links as the first (no link explosion)
    _record(clock, eng, "C", X_URL, T0 + timedelta(hours=2))
    assert len(store.find_links("C", X_URL)) == len(a_links)
    assert counter.get(X_URL) == 1


def test_ttl_boundary_and_no_clock_self_advance(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    for t in ("A", "B", "C", "D"):
        _token(store, t, [X_URL])
    _record(clock, eng, "A", X_URL, T0)
    # 13 d 23 h after A's call: reuse; the reuse leaves B's attempted_at null and attempts 0 (the TTL clock only moves on a real call)
    b = _record(clock, eng, "B", X_URL, T0 + timedelta(days=13, hours=23))
    assert b.reused and counter.get(X_URL) == 1
    el = _el(store, "B", X_URL)
    assert (el.status, el.attempted_at, el.attempts) == (FetchStatus.OK, None, 0)
    # 14 d + 1 s after A's call: B's reuse did not move the anchor, so C fetches
    c = _record(clock, eng, "C", X_URL, T0 + timedelta(days=14, seconds=1))
    assert not c.reused and c.attempted and counter.get(X_URL) == 2
    # the anchor is the LATEST real call (C's), so D reuses again
    d = _record(clock, eng, "D", X_URL, T0 + timedelta(days=14, seconds=2))
    assert d.reused and counter.get(X_URL) == 2


def test_a_blocked_paid_answer_is_bought_once(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """Two tokens share a paid URL whose target is private: the second records `blocked`, reused,
    with no call (it used to pay again)."""
    eng = build_engine(store, locks, counting_registry(counter, {X_URL: Behaviour("blocked")}), clock=clock)
    for t in ("A", "B"):
        _token(store, t, [X_URL])
    a = _record(clock, eng, "A", X_URL, T0)
    b = _record(clock, eng, "B", X_URL, T0 + timedelta(hours=1))
    assert a.status is FetchStatus.BLOCKED and a.attempted
    assert b.status is FetchStatus.BLOCKED and b.reused and not b.attempted
    assert counter.get(X_URL) == 1


def test_an_invalid_answer_is_reused(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter, {X_URL: Behaviour("invalid")}), clock=clock)
    for t in ("A", "B"):
        _token(store, t, [X_URL])
    assert _record(clock, eng, "A", X_URL, T0).status is FetchStatus.INVALID
    b = _record(clock, eng, "B", X_URL, T0 + timedelta(hours=1))
    assert b.status is FetchStatus.INVALID and b.reused and counter.get(X_URL) == 1


def test_not_found_is_reused_without_links_or_calls(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    for t in ("N", "B"):
        _token(store, t, [X_URL])
    seed_result(store, "N", X_URL, FetchStatus.NOT_FOUND, T0)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    b = _record(clock, eng, "B", X_URL, T0 + timedelta(days=1))
    assert b.status is FetchStatus.NOT_FOUND and b.reused
    el = _el(store, "B", X_URL)
    assert (el.status, el.attempts, el.attempted_at) == (FetchStatus.NOT_FOUND, 0, None)
    assert store.find_links("B", X_URL) == [] and counter.total() == 0


def test_an_error_is_not_reused_but_waits_out_its_back_off(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    for t in ("E", "B"):
        _token(store, t, [X_URL])
    seed_result(store, "E", X_URL, FetchStatus.ERROR, T0)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    b = _record(clock, eng, "B", X_URL, T0 + timedelta(minutes=1))
    assert b.status is FetchStatus.ERROR and not b.reused and not b.attempted and counter.get(X_URL) == 0
    later = _record(clock, eng, "B", X_URL, T0 + timedelta(minutes=61))
    assert later.status is FetchStatus.OK and later.attempted and counter.get(X_URL) == 1


def test_telegram_is_never_reused(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    for t in ("A", "B"):
        _token(store, t, [TG_URL])
    _record(clock, eng, "A", TG_URL, T0)
    b = _record(clock, eng, "B", TG_URL, T0 + timedelta(minutes=1))
    assert b.status is FetchStatus.OK and not b.reused
    assert counter.get(TG_URL) == 2
