"""RetryService (DESIGN §7, seed 004 §6.2): validation, candidates, back-off, counters, locks."""

from __future__ import annotations

from datetime import timedelta

import pytest

from social_recording.domain.models import SocialUrl, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.locks.base import LockManager
from social_recording.recording.retry import RETRY_LOCK_KEY, RetryService, parse_retry_statuses
from social_recording.recording.url_recorder import EngineOutcome
from social_recording.store.sqlite import SqliteStore
from social_recording_tests.recording.engine_fakes import (
    DISCORD_URL,
    GH_URL,
    T0,
    TG_URL,
    WEB_URL,
    X_URL,
    YT_URL,
    Behaviour,
    Engine,
    MemoryCounter,
    StepClock,
    build_engine,
    counting_registry,
)


def _service(eng: Engine, clock: StepClock, monotonic: object = None) -> RetryService:
    kwargs = {} if monotonic is None else {"monotonic": monotonic}
    return RetryService(eng.store, eng.locks, eng.processor, clock=clock, **kwargs)  # type: ignore[arg-type]


def _el(store: SqliteStore, address: str, url: str) -> SocialUrl:
    doc = store.find_token(address)
    assert doc is not None
    el = doc.element(url)
    assert el is not None
    return el


def _seed(store: SqliteStore) -> None:
    """A: pending, error (old), error (recent); B: skipped_paid, unsupported, invalid; C: ok."""
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[YT_URL, GH_URL, X_URL]), T0)
    store.record_url_result("A", GH_URL, FetchStatus.ERROR, T0 - timedelta(hours=2))
    store.record_url_result("A", X_URL, FetchStatus.ERROR, T0 - timedelta(minutes=10))
    assert store.create_pending_token(TokenProfile(address="B", symbol="B", urls=[WEB_URL, DISCORD_URL, TG_URL]), T0)
    store.record_url_result("B", WEB_URL, FetchStatus.SKIPPED_PAID, None)
    store.record_url_result("B", DISCORD_URL, FetchStatus.UNSUPPORTED, None)
    store.record_url_result("B", TG_URL, FetchStatus.INVALID, T0 - timedelta(days=1))
    assert store.create_pending_token(TokenProfile(address="C", urls=["https://example.com/ok"]), T0)
    store.record_url_result("C", "https://example.com/ok", FetchStatus.OK, T0 - timedelta(days=1))


@pytest.mark.parametrize(
    ("statuses", "match"),
    [
        (["ok"], "must not contain 'ok'"),
        ([FetchStatus.ERROR, FetchStatus.OK], "must not contain 'ok'"),
        (["error", "bogus"], "unknown FetchStatus 'bogus'"),
        ([], "at least one"),
        ("error", "list of status names"),
    ],
)
def test_bad_statuses_are_rejected_before_anything_runs(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock,
    statuses: object, match: str,
) -> None:
    _seed(store)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    # even with the job lock busy: validation comes first
    with locks.try_hold(RETRY_LOCK_KEY, 30), pytest.raises(ValueError, match=match):
        _service(eng, clock).retry(statuses=statuses)  # type: ignore[arg-type]
    assert counter.total() == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"limit": 0}, "limit"),
        ({"min_interval_minutes": -1}, "min_interval_minutes"),
        ({"max_workers": 40}, "max_workers"),
        ({"deadline_seconds": -5}, "deadline_seconds"),
        ({"token_addresses": "A"}, "token_addresses"),
        ({"token_addresses": ["A", ""]}, "token_addresses"),
    ],
)
def test_bad_arguments_are_rejected(
    store: SqliteStore, locks: LockManager, clock: StepClock, kwargs: dict[str, object], match: str
) -> None:
    eng = build_engine(store, locks, counting_registry(MemoryCounter()), clock=clock)
    with pytest.raises(ValueError, match=match):
        _service(eng, clock).retry(**kwargs)  # type: ignore[arg-type]


def test_default_retry_counters(store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock) -> None:
    _seed(store)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    out = _service(eng, clock).retry()
    # candidates: A pending, A error old, A error recent, B skipped_paid, B unsupported (invalid/ok are absorbing)
    assert (out.candidate_urls, out.skipped_by_interval, out.processed) == (5, 1, 4)
    assert (out.converged, out.locked_out, out.remaining, out.stopped_by) == (3, 0, 0, "drained")
    assert out.status_counts == {"ok": 3, "unsupported": 1}
    assert counter.get(X_URL) == 0  # inside the back-off
    assert _el(store, "B", TG_URL).status is FetchStatus.INVALID  # absorbing: not named, not touched
    assert out.metadata()["converged"] == 3
    # the next run: the recent error is still backing off, unsupported stays a zero-call candidate
    again = _service(eng, clock).retry()
    assert (again.candidate_urls, again.skipped_by_interval, again.processed, again.converged) == (2, 1, 1, 0)


def test_limit_counts_urls_and_reports_remaining(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    _seed(store)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    out = _service(eng, clock).retry(limit=2)
    assert (out.processed, out.remaining, out.stopped_by) == (2, 2, "limit")
    assert [u.url for u in out.url_outcomes] == [YT_URL, GH_URL]


def test_min_interval_zero_forces_and_named_absorbing_status_escapes(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    _seed(store)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    forced = _service(eng, clock).retry(statuses=["error"], min_interval_minutes=0)
    assert (forced.candidate_urls, forced.skipped_by_interval, forced.processed) == (2, 0, 2)
    assert counter.get(X_URL) == 1
    escaped = _service(eng, clock).retry(statuses=["invalid"], token_addresses=["B"])
    assert (escaped.processed, escaped.converged) == (1, 1)
    assert _el(store, "B", TG_URL).status is FetchStatus.OK


def test_exhaustion_counts_as_converged(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    assert store.create_pending_token(TokenProfile(address="A", urls=[YT_URL]), T0)
    for i in range(4):
        store.record_url_result("A", YT_URL, FetchStatus.ERROR, T0 - timedelta(hours=10 - i))
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour("error")}), clock=clock)
    out = _service(eng, clock).retry()
    assert out.converged == 1 and out.url_outcomes[0].status is FetchStatus.EXHAUSTED
    assert _el(store, "A", YT_URL).attempts == 5


def test_token_addresses_filter(store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock) -> None:
    _seed(store)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    out = _service(eng, clock).retry(token_addresses=["B"])
    assert {u.token for u in out.url_outcomes} == {"B"} and out.processed == 2
    # an empty list means "every token" (the natural unset value of a config list)
    assert _service(eng, clock).retry(token_addresses=[]).candidate_urls == 4


def test_token_lock_held_counts_locked_out(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    _seed(store)
    eng = build_engine(store, any_locks, counting_registry(counter), clock=clock)
    with any_locks.try_hold("social-record:A", 30):
        out = _service(eng, clock).retry()
    assert out.locked_out == 2 and out.processed == 4
    assert [u.status for u in out.url_outcomes if u.token == "A"] == [EngineOutcome.LOCKED_OUT] * 2
    assert counter.get(YT_URL) == 0 and _el(store, "A", YT_URL).status is FetchStatus.PENDING


def test_job_lock_held_means_skipped(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    _seed(store)
    eng = build_engine(store, any_locks, counting_registry(counter), clock=clock)
    with any_locks.try_hold(RETRY_LOCK_KEY, 30):
        out = _service(eng, clock).retry()
    assert out.skipped == "already running" and out.processed == 0 and counter.total() == 0


def test_deadline_stops_between_urls(store: SqliteStore, locks: LockManager, counter: MemoryCounter,
                                     clock: StepClock) -> None:
    _seed(store)
    now = [0.0]

    def on_call(url: str) -> None:
        now[0] += 10.0

    eng = build_engine(store, locks, counting_registry(counter, on_call=on_call), clock=clock)
    out = _service(eng, clock, monotonic=lambda: now[0]).retry(deadline_seconds=15, max_workers=1)
    # YT (0 s -> 10 s), GH (10 s -> 20 s), then the deadline: B's two URLs are not started
    assert (out.processed, out.remaining, out.stopped_by) == (2, 2, "deadline")


def test_parse_retry_statuses_default_set() -> None:
    assert parse_retry_statuses(["error", "pending"]) == {FetchStatus.ERROR, FetchStatus.PENDING}


def test_non_canonical_stored_url_is_isolated_within_a_run(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    bad = "HTTP://Example.com/Bad/"
    assert store.create_pending_token(TokenProfile(address="A", urls=[bad, YT_URL, GH_URL]), T0)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    out = _service(eng, clock).retry()
    assert [u.status for u in out.url_outcomes] == [EngineOutcome.INVALID_URL, FetchStatus.OK, FetchStatus.OK]
    assert (out.processed, out.converged) == (3, 2)
    el = _el(store, "A", bad)
    assert (el.status, el.attempts) == (FetchStatus.PENDING, 0)


def test_credit_exhaustion_is_shared_by_the_whole_run(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    x_other = "https://x.com/i/status/3"
    assert store.create_pending_token(TokenProfile(address="A", urls=[X_URL]), T0)
    assert store.create_pending_token(TokenProfile(address="B", urls=[x_other, YT_URL]), T0)
    eng = build_engine(store, locks, counting_registry(counter, {X_URL: Behaviour("credit_exhausted")}), clock=clock)
    out = _service(eng, clock).retry(max_workers=1)
    assert [(u.token, u.status) for u in out.url_outcomes] == [
        ("A", FetchStatus.ERROR), ("B", FetchStatus.SKIPPED_PAID), ("B", FetchStatus.OK),
    ]
    assert counter.get(x_other) == 0 and counter.get(YT_URL) == 1
