"""TokenProcessor: record (live / reconcile), record_urls and resolve_unresolved (retry)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta
from pathlib import Path

import pytest

from social_recording.domain.models import SocialUrl, TokenProfile
from social_recording.domain.status import Cause, FetchStatus
from social_recording.locks.base import Lease, LockManager
from social_recording.recording.answer_spool import AnswerSpool
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.outcomes import EngineOutcome, TokenOutcome, TokenStatus
from social_recording.recording.processor import TOKEN_LOCK_TTL_S
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    DISCORD_URL,
    GH_URL,
    T0,
    TG_URL,
    WEB_URL,
    X_URL,
    X_URL_2,
    YT_URL,
    Behaviour,
    FakeProfiles,
    MemoryCounter,
    StepClock,
    build_engine,
    counting_registry,
    record_one_url,
    seed_result,
)

BAD_URL = "HTTP://Example.com/Bad/"


def _el(store: SqliteStore, address: str, url: str) -> SocialUrl:
    doc = store.find_token(address)
    assert doc is not None
    el = doc.element(url)
    assert el is not None
    return el


def test_token_lock_ttl_constant() -> None:
    assert 0 < TOKEN_LOCK_TTL_S <= 120


def test_new_token_is_precreated_pending_then_recorded_url_by_url(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    profiles.add("A", [YT_URL, GH_URL, DISCORD_URL], symbol="AAA")
    registry = counting_registry(counter)
    eng = build_engine(store, locks, registry, profiles=profiles)
    out = eng.processor.record("A", "ignored", RunState())
    assert out.status is TokenStatus.RECORDED and out.created
    assert [u.status for u in out.urls] == [FetchStatus.OK, FetchStatus.OK, FetchStatus.UNSUPPORTED]
    assert profiles.reads == ["A"]
    doc = store.find_token("A")
    assert doc is not None and doc.symbol == "AAA"
    assert [(e.url, e.status, e.attempts) for e in doc.social_urls] == [
        (YT_URL, FetchStatus.OK, 1), (GH_URL, FetchStatus.OK, 1), (DISCORD_URL, FetchStatus.UNSUPPORTED, 0),
    ]


def test_no_profile_writes_nothing(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    eng = build_engine(store, locks, counting_registry(counter))
    out = eng.processor.record("A", None, RunState())
    assert out.status is TokenStatus.NO_PROFILE
    assert store.find_token("A") is None and eng.profiles.reads == ["A"]


def test_v5_stored_token_no_upstream_call_only_realtime_targets(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    urls = {
        "https://example.com/pending": (FetchStatus.PENDING, None),
        "https://example.com/error-old": (FetchStatus.ERROR, T0 - timedelta(minutes=61)),
        "https://example.com/error-new": (FetchStatus.ERROR, T0 - timedelta(minutes=30)),
        "https://example.com/skipped": (FetchStatus.SKIPPED_PAID, None),
        "https://example.com/unsupported": (FetchStatus.UNSUPPORTED, None),
        "https://example.com/not-found": (FetchStatus.NOT_FOUND, T0 - timedelta(days=3)),
        "https://example.com/blocked": (FetchStatus.BLOCKED, T0 - timedelta(days=3)),
        "https://example.com/invalid": (FetchStatus.INVALID, T0 - timedelta(days=3)),
        "https://example.com/exhausted": (FetchStatus.EXHAUSTED, T0 - timedelta(days=3)),
        "https://example.com/ok": (FetchStatus.OK, T0 - timedelta(days=3)),
    }
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=list(urls)), T0)
    for url, (status, at) in urls.items():
        if status is not FetchStatus.PENDING:
            seed_result(store, "A", url, status, at)
    profiles = FakeProfiles()
    profiles.add("A", [YT_URL])  # upstream would offer another URL: must not be asked
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles, clock=clock)
    out = eng.processor.record("A", None, RunState())
    assert profiles.reads == []
    assert [u.url for u in out.urls] == ["https://example.com/pending", "https://example.com/error-old"]
    assert counter.total() == 2
    # nothing left to do right now
    again = eng.processor.record("A", None, RunState())
    assert again.status is TokenStatus.UP_TO_DATE and counter.total() == 2 and profiles.reads == []


def test_v6_backoff_no_second_call_within_60_minutes(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour("error")}), clock=clock)
    eng.profiles.add("A", [YT_URL])
    eng.processor.record("A", None, RunState())
    assert counter.get(YT_URL) == 1
    for minutes in (1, 30, 59):
        clock.set(T0 + timedelta(minutes=minutes))
        assert eng.processor.record("A", None, RunState()).status is TokenStatus.UP_TO_DATE
    assert counter.get(YT_URL) == 1
    clock.set(T0 + timedelta(minutes=60))
    assert eng.processor.record("A", None, RunState()).urls[0].status is FetchStatus.ERROR
    assert counter.get(YT_URL) == 2
    assert _el(store, "A", YT_URL).attempts == 2


def test_v8_skipped_paid_is_not_reopened_by_the_live_path(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    off = build_engine(store, locks, counting_registry(counter), enable_paid=False, clock=clock)
    off.profiles.add("A", [X_URL, DISCORD_URL])
    off.processor.record("A", None, RunState())
    assert _el(store, "A", X_URL).status is FetchStatus.SKIPPED_PAID
    # paid calls switched on: the live path still does not reopen skipped_paid / unsupported
    on = build_engine(store, locks, counting_registry(counter), enable_paid=True, clock=clock)
    for _ in range(3):
        assert on.processor.record("A", None, RunState()).status is TokenStatus.UP_TO_DATE
    assert counter.total() == 0
    # ... the retry path does
    assert record_one_url(on, "A", X_URL, RunState()).status is FetchStatus.OK
    assert counter.get(X_URL) == 1


def test_token_lock_held_elsewhere_returns_locked_out_at_once(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    eng = build_engine(store, any_locks, counting_registry(counter))
    eng.profiles.add("A", [YT_URL])
    with any_locks.try_hold("social-record:A", 30) as other:
        assert other.held
        out = eng.processor.record("A", None, RunState())
        one = record_one_url(eng, "A", YT_URL, RunState())
    assert out.status is TokenStatus.LOCKED_OUT and out.urls == ()
    assert one.status is EngineOutcome.LOCKED_OUT
    assert eng.profiles.reads == [] and store.find_token("A") is None and counter.total() == 0


def test_concurrent_create_continues_from_the_stored_doc(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    """create_pending_token is insert-only: when someone created the token meanwhile we take its
    REALTIME targets from the stored doc instead of the profile's URLs."""

    class RacingProfiles(FakeProfiles):
        def read(self, address: str) -> TokenProfile | None:
            profile = super().read(address)
            store.create_pending_token(TokenProfile(address=address, symbol="X", urls=[YT_URL, GH_URL]), T0)
            seed_result(store, address, YT_URL, FetchStatus.OK, T0)
            return profile

    profiles = RacingProfiles()
    profiles.add("A", [YT_URL, GH_URL, WEB_URL])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles)
    out = eng.processor.record("A", None, RunState())
    assert out.status is TokenStatus.RECORDED and not out.created
    assert [u.url for u in out.urls] == [GH_URL]
    assert counter.total() == 1


def test_lost_token_lease_stops_between_urls(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    class Wrapper:
        def __init__(self, inner: LockManager) -> None:
            self.inner = inner
            self.token_lease: Lease | None = None

        @contextmanager
        def _keep(self, cm: AbstractContextManager[Lease]) -> Iterator[Lease]:
            with cm as lease:
                self.token_lease = lease
                yield lease

        def try_hold(self, key: str, ttl: float) -> AbstractContextManager[Lease]:
            return self._keep(self.inner.try_hold(key, ttl))

        def hold_within(self, key: str, ttl: float, wait: float) -> AbstractContextManager[Lease]:
            return self.inner.hold_within(key, ttl, wait)

        def close(self) -> None:
            pass

    wrapped = Wrapper(locks)

    def on_call(url: str) -> None:
        assert wrapped.token_lease is not None
        wrapped.token_lease.mark_lost("test: token lock expired")

    eng = build_engine(store, wrapped, counting_registry(counter, on_call=on_call))
    eng.profiles.add("A", [YT_URL, GH_URL])
    out = eng.processor.record("A", None, RunState(calls=CallSlots(per_token=1)))  # one after another
    assert out.status is TokenStatus.LOST
    assert [u.url for u in out.urls] == [YT_URL]
    assert _el(store, "A", GH_URL).status is FetchStatus.PENDING and counter.get(GH_URL) == 0


def test_upstream_failure_is_isolated_to_the_token(store: SqliteStore, locks: LockManager) -> None:
    class Failing(FakeProfiles):
        def read(self, address: str) -> TokenProfile | None:
            raise RuntimeError("tracker down")

    eng = build_engine(store, locks, counting_registry(MemoryCounter()), profiles=Failing())
    out = eng.processor.record("A", None, RunState())
    assert out.status is TokenStatus.FAILED and "RuntimeError" in out.detail
    assert store.find_token("A") is None


def test_non_canonical_stored_url_is_isolated_in_retry(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    assert store.create_pending_token(TokenProfile(address="A", urls=[BAD_URL, YT_URL]), T0)
    eng = build_engine(store, locks, counting_registry(counter))
    bad = record_one_url(eng, "A", BAD_URL, RunState())
    good = record_one_url(eng, "A", YT_URL, RunState())
    assert bad.status is EngineOutcome.INVALID_URL and "canonical" in bad.detail
    assert good.status is FetchStatus.OK
    el = _el(store, "A", BAD_URL)
    assert (el.status, el.attempts) == (FetchStatus.PENDING, 0)  # untouched
    assert counter.total() == 1
    # the live path isolates it the same way
    out = eng.processor.record("A", None, RunState())
    assert [u.status for u in out.urls] == [EngineOutcome.INVALID_URL]


def test_the_retry_path_uses_our_symbol_and_no_upstream(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    from social_recording.domain.urls import Platform

    registry = counting_registry(counter)
    eng = build_engine(store, locks, registry)
    assert store.create_pending_token(TokenProfile(address="A", symbol="SYM", urls=[TG_URL]), T0)
    assert record_one_url(eng, "A", TG_URL, RunState()).status is FetchStatus.OK
    assert eng.profiles.reads == []
    gen = registry.get(Platform.TELEGRAM)
    assert gen is not None and gen.contexts[-1].token_symbol == "SYM"  # type: ignore[attr-defined]
    missing = record_one_url(eng, "A", GH_URL, RunState())
    assert missing.status is EngineOutcome.NO_ELEMENT


class _CrashOnceInTheWrite(SqliteStore):
    """Simulates a process dying inside the URL's write: nothing of it commits."""

    crashes = 1

    def apply_url_write(self, write):  # type: ignore[no-untyped-def]
        if self.crashes:
            self.crashes -= 1
            raise RuntimeError("process died here")
        return super().apply_url_write(write)


@pytest.mark.parametrize("reuse", [False, True])
def test_retry_after_a_crash_in_the_write_leaves_exactly_one_set_of_links(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, reuse: bool, tmp_path: Path
) -> None:
    """The paid answer whose write failed is kept in the spool: the next run writes it, and pays for
    nothing again (it paid twice before a paid call had a durable record)."""
    if reuse:  # B's links come from A's through the reuse path
        assert store.create_pending_token(TokenProfile(address="A", urls=[X_URL_2]), T0)
        record_one_url(build_engine(store, locks, counting_registry(counter)), "A", X_URL_2, RunState())
    assert store.create_pending_token(TokenProfile(address="B", urls=[X_URL_2]), T0)
    crashing = _CrashOnceInTheWrite(store.path)
    try:
        eng = build_engine(crashing, locks, counting_registry(counter), spool=AnswerSpool(tmp_path / "spool"))
        first = record_one_url(eng, "B", X_URL_2, RunState())
        assert first.status is EngineOutcome.FAILED
        assert store.find_links("B", X_URL_2) == [] and _el(store, "B", X_URL_2).status is FetchStatus.PENDING
        second = record_one_url(eng, "B", X_URL_2, RunState())
        assert second.status is FetchStatus.OK and second.reused is reuse
        assert len(store.find_links("B", X_URL_2)) == 4
    finally:
        crashing.close()
    assert counter.get(X_URL_2) == 1
    assert not list((tmp_path / "spool").glob("*.json")), "the spooled answer is written and removed"


def test_bad_arguments_are_rejected(store: SqliteStore, locks: LockManager) -> None:
    eng = build_engine(store, locks, counting_registry(MemoryCounter()))
    with pytest.raises(ValueError, match="address"):
        eng.processor.record("", None, RunState())
    with pytest.raises(ValueError, match="address"):
        record_one_url(eng, "  ", YT_URL, RunState())
    with pytest.raises(ValueError, match="token_lock_ttl"):
        build_engine(store, locks, eng.registry, token_lock_ttl=0)
    with pytest.raises(ValueError, match="min_interval"):
        build_engine(store, locks, eng.registry, min_interval=timedelta(minutes=-1))


def test_live_events_every_minute_for_two_hours_reopen_a_no_call_error_at_most_twice(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """An `error` recorded without a call (a free provider's quota gone earlier in the run) respects
    the back-off like any other: live events every minute for two hours reopen it at most twice
    (it used to be reopened by every event, forever)."""
    yt_quota = "https://youtube.com/watch?v=quotaquota1"
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour("credit_exhausted")}), clock=clock)
    eng.profiles.add("A", [YT_URL, yt_quota])
    first = eng.processor.record("A", None, RunState(calls=CallSlots(per_token=1)))  # quota gone, then the next
    assert [u.status for u in first.urls] == [FetchStatus.ERROR, FetchStatus.ERROR]
    assert [u.attempted for u in first.urls] == [True, False]
    reopened = 0
    for _ in range(120):
        clock.advance(timedelta(minutes=1))
        out = eng.processor.record("A", None, RunState())
        reopened += sum(1 for u in out.urls if u.url == yt_quota)
    assert reopened <= 2


def test_unparseable_shapes_and_missing_keys_are_unsupported_and_never_reopened_live(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """A shape no generator can read, and a platform whose provider key is not set, are `unsupported`
    with zero calls (never an `error` that loops): the live path never reopens them."""
    from social_recording.domain.urls import Platform

    registry = counting_registry(counter, {YT_URL: Behaviour("unsupported_shape")})
    registry.unavailable[Platform.GITHUB] = "GITHUB_TOKEN is not set"
    eng = build_engine(store, locks, registry, clock=clock)
    eng.profiles.add("A", [YT_URL, GH_URL])
    out = eng.processor.record("A", None, RunState())
    assert [(u.status, u.attempted) for u in out.urls] == [(FetchStatus.UNSUPPORTED, False)] * 2
    assert "GITHUB_TOKEN is not set" in out.urls[1].detail
    yt, gh = _el(store, "A", YT_URL), _el(store, "A", GH_URL)
    assert (yt.cause, gh.cause) == (Cause.UNPARSEABLE, Cause.NO_GENERATOR)
    for _ in range(120):
        clock.advance(timedelta(minutes=1))
        assert eng.processor.record("A", None, RunState()).status is TokenStatus.UP_TO_DATE
    assert counter.total() == 0


def test_a_live_batch_records_its_tokens_in_order_and_isolates_a_token_that_raises(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = build_engine(store, locks, counting_registry(counter))
    for address, url in (("A", YT_URL), ("B", GH_URL), ("C", YT_URL)):
        eng.profiles.add(address, [url])
    real_record = eng.processor.record

    def record(address: str, symbol: str | None, run: RunState | None = None, **kwargs: float) -> TokenOutcome:
        if address == "B":  # past every guard of record(): a defect of ours
            raise KeyError("boom")
        return real_record(address, symbol, run, **kwargs)

    monkeypatch.setattr(eng.processor, "record", record)
    run = RunState()
    out = eng.processor.record_batch([("A", "a"), ("B", "b"), ("C", "c")], run, max_workers=2)
    assert [(o.address, o.status) for o in out] == [
        ("A", TokenStatus.RECORDED), ("B", TokenStatus.FAILED), ("C", TokenStatus.RECORDED)]
    assert "KeyError" in out[1].detail and all(o.urls == () for o in out)
    assert counter.get(YT_URL) == 1  # A and C share the URL: one call
    assert run.status_counts() == {"ok": 2}


def test_a_live_batch_looks_again_at_a_token_a_crashed_worker_left_locked(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    """The first look finds the token locked out; the run's second look waits for the dead holder's
    lock to expire and records it (nothing counted twice)."""
    from social_recording.locks.extender import LeasingLockManager

    eng = build_engine(store, any_locks, counting_registry(counter), token_lock_wait=20.0)
    eng.profiles.add("A", [YT_URL])
    eng.profiles.add("B", [GH_URL])
    assert isinstance(any_locks, LeasingLockManager)
    assert any_locks.acquire("social-record:A", "crashed-host:1:dead", 1.5) > 0
    run = RunState()
    out = eng.processor.record_batch([("A", "a"), ("B", "b")], run, max_workers=2)
    assert [(o.address, o.status) for o in out] == [("A", TokenStatus.RECORDED), ("B", TokenStatus.RECORDED)]
    assert run.status_counts() == {"ok": 2} and counter.total() == 2
