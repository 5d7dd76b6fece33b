"""The back-off grows with a URL's failure streak when the policy says so, and every reader follows
the one stored due time: the retry selection, the live path, the state machine for another holder,
and health's "next retry" (docs/architecture.md, "Back-off: one due time")."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from social_recording.domain.models import SocialUrl, TokenProfile
from social_recording.domain.policy import DEFAULT_BACKOFF, Backoff, due_by
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.base import LockManager
from social_recording.recording.health import next_retry
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    GH_URL,
    T0,
    Behaviour,
    Engine,
    MemoryCounter,
    StepClock,
    build_engine,
    counting_registry,
    retry_run,
)

HOUR = timedelta(hours=1)
DOUBLING = Backoff(growth=2.0, cap=timedelta(hours=6))
FREE = frozenset(p for p in Platform if p is not Platform.DISCORD)


@pytest.mark.parametrize(("backoff", "waits"), [
    (DEFAULT_BACKOFF, [HOUR] * 7),
    (DOUBLING, [HOUR, HOUR, 2 * HOUR, 4 * HOUR, 6 * HOUR, 6 * HOUR, 6 * HOUR]),
    (Backoff(timedelta(minutes=30), 3.0, timedelta(hours=10)),
     [timedelta(minutes=m) for m in (30, 30, 90, 270, 600, 600, 600)]),
])
def test_the_wait_for_each_streak_is_one_rule(backoff: Backoff, waits: list[timedelta]) -> None:
    assert [backoff.delay(streak) for streak in range(7)] == waits
    assert backoff.next_due(T0, 3) == T0 + waits[3]
    assert backoff.delay(10_000) == backoff.cap or backoff.growth == 1.0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"growth": 0.5}, "growth must be between 1 and 10, got 0.5"),
    ({"growth": 11.0}, "growth must be between 1 and 10"),
    ({"cap": timedelta(minutes=5)}, "maximum .* must be at least its base"),
    ({"base": timedelta(minutes=-1)}, "base must be >= 0"),
])
def test_a_bad_back_off_is_refused_naming_the_value(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Backoff(**kwargs)  # type: ignore[arg-type]


def test_a_run_interval_moves_every_due_time_by_its_difference_to_the_base() -> None:
    assert due_by(T0, HOUR) == T0
    assert due_by(T0, timedelta(0)) == T0 + HOUR
    assert due_by(T0, 3 * HOUR) == T0 - 2 * HOUR
    far = datetime.max.replace(tzinfo=T0.tzinfo)
    assert due_by(far, timedelta(0)) == far  # "everything" stays at the end of the calendar


def _element(store: SqliteStore, address: str) -> SocialUrl:
    el = store.find_element(address, GH_URL)
    assert el is not None
    return el


def _engine(store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock) -> Engine:
    registry = counting_registry(counter, {GH_URL: Behaviour(outcome="error")})
    return build_engine(store, locks, registry, clock=clock, max_attempts=6, backoff=DOUBLING)


def test_a_failing_url_waits_longer_after_each_failure_and_every_reader_agrees(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = _engine(store, locks, counter, clock)
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[GH_URL]), T0)
    calls_at: list[datetime] = []
    for wait in (HOUR, 2 * HOUR, 4 * HOUR, 6 * HOUR):  # the waits after calls 1, 2, 3 and 4 (capped)
        called = clock()
        assert retry_run(eng).processed == 1 and counter.get(GH_URL) == len(calls_at) + 1
        calls_at.append(called)
        el = _element(store, "A")
        assert (el.status, el.checked_at, el.due_at) == (FetchStatus.ERROR, called, called + wait)
        # A minute before it is due: the selection, the live path and health all hold it back.
        clock.set(called + wait - timedelta(minutes=1))
        assert retry_run(eng).candidate_urls == 0
        assert eng.processor.record("A", "A").urls == ()
        assert counter.get(GH_URL) == len(calls_at)
        ahead = next_retry(store, clock(), enable_paid=True, usable_platforms=FREE)
        assert (ahead.due_now, ahead.next_due_at) == (0, called + wait)
        clock.set(called + wait)
    # The fifth failure: the streak is still below the budget of 6, and the last wait stays capped.
    assert retry_run(eng).processed == 1
    assert _element(store, "A").due_at == clock() + 6 * HOUR
    state = store.find_url_state(GH_URL)
    assert state is not None and (state.streak, state.attempts) == (5, 5)


def test_another_holder_inside_the_grown_wait_adopts_the_failure_and_is_dated_by_the_same_rule(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = _engine(store, locks, counter, clock)
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[GH_URL]), T0)
    retry_run(eng)
    clock.set(T0 + HOUR)
    retry_run(eng)  # two failures in a row: the URL may be called again two hours after the second
    assert counter.get(GH_URL) == 2
    # A new holder 90 minutes later: past the flat hour, inside the doubled wait.
    clock.set(T0 + HOUR + timedelta(minutes=90))
    eng.profiles.add("B", [GH_URL], symbol="B")
    (outcome,) = eng.processor.record("B", "B").urls
    assert counter.get(GH_URL) == 2 and outcome.status is FetchStatus.ERROR
    b = _element(store, "B")
    assert (b.cause, b.due_at) == (Cause.BACKOFF, clock() + 2 * HOUR)
    assert "called again after the back-off" in (b.detail or "")
    # Once the URL's wait is over the retry job calls it once, for both holders.
    clock.set(T0 + 3 * HOUR)
    assert retry_run(eng).processed == 1  # A (B is due later: it was recorded later)
    assert counter.get(GH_URL) == 3


def test_the_flat_default_keeps_the_hourly_rhythm(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    registry = counting_registry(counter, {GH_URL: Behaviour(outcome="error")})
    eng = build_engine(store, locks, registry, clock=clock)
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[GH_URL]), T0)
    for n in range(1, 4):
        assert retry_run(eng).processed == 1 and counter.get(GH_URL) == n
        assert _element(store, "A").due_at == clock() + HOUR
        clock.advance(HOUR)
