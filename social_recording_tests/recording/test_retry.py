"""Retry as retry_job runs it (select the due elements, then record them): validation, the fair and
finite selection, back-off, one bill per shared URL, counters, locks, and raw values resolved again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from social_recording.domain.models import SocialUrl, TokenProfile, UnresolvedValue
from social_recording.domain.status import FetchStatus
from social_recording.locks.base import LockManager
from social_recording.recording.candidates import parse_retry_statuses
from social_recording.recording.outcomes import EngineOutcome
from social_recording.recording.retry import RETRY_LOCK_KEY
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
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
    retry_run,
    seed_result,
)


def _el(store: SqliteStore, address: str, url: str) -> SocialUrl:
    el = store.find_element(address, url)
    assert el is not None
    return el


def _seed(store: SqliteStore, eng: Engine | None = None) -> None:
    """A: pending, error (old), error (recent); B: skipped_paid, unsupported (discord), invalid; C: ok."""
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[YT_URL, GH_URL, X_URL]), T0)
    seed_result(store, "A", GH_URL, FetchStatus.ERROR, T0 - timedelta(hours=2))
    seed_result(store, "A", X_URL, FetchStatus.ERROR, T0 - timedelta(minutes=10))
    assert store.create_pending_token(TokenProfile(address="B", symbol="B", urls=[WEB_URL, DISCORD_URL, TG_URL]), T0)
    off = build_engine(store, eng.locks if eng else _NoLocks(), counting_registry(MemoryCounter()), enable_paid=False,
                       clock=lambda: T0 - timedelta(hours=3))
    assert off.recorder.record_url(("B", None), WEB_URL, off.processor.new_run()).status is FetchStatus.SKIPPED_PAID
    assert off.recorder.record_url(("B", None), DISCORD_URL, off.processor.new_run()).status is FetchStatus.UNSUPPORTED
    seed_result(store, "B", TG_URL, FetchStatus.INVALID, T0 - timedelta(days=1))
    assert store.create_pending_token(TokenProfile(address="C", urls=["https://example.com/ok"]), T0)
    seed_result(store, "C", "https://example.com/ok", FetchStatus.OK, T0 - timedelta(days=1))


class _NoLocks:
    """Never used: _seed is always given an engine's lock manager in these tests."""


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
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    _seed(store, eng)
    # even with the job lock busy: validation comes first
    with locks.try_hold(RETRY_LOCK_KEY, 30), pytest.raises(ValueError, match=match):
        retry_run(eng, statuses=statuses)  # type: ignore[arg-type]
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
        retry_run(eng, **kwargs)  # type: ignore[arg-type]


def test_default_selection_counters(store: SqliteStore, locks: LockManager, counter: MemoryCounter,
                                    clock: StepClock) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    _seed(store, eng)
    out = retry_run(eng)
    # due: A pending, A old error, B skipped_paid (paid calls are on here). Not candidates: A's recent
    # error (backing off), B's discord (no generator can change it), B invalid and C ok (answers).
    assert [(u.token, u.url) for u in out.url_outcomes] == [("A", YT_URL), ("A", GH_URL), ("B", WEB_URL)]
    assert (out.candidate_urls, out.processed, out.converged, out.remaining, out.stopped_by) == (3, 3, 3, 0, "drained")
    assert out.status_counts == {"ok": 3}
    assert counter.get(X_URL) == 0 and counter.get(DISCORD_URL) == 0
    assert _el(store, "B", TG_URL).status is FetchStatus.INVALID
    assert _el(store, "B", DISCORD_URL).status is FetchStatus.UNSUPPORTED
    # the next run: only the recent error, once its back-off has passed
    assert retry_run(eng).processed == 0
    clock.advance(timedelta(minutes=51))
    again = retry_run(eng)
    assert [u.url for u in again.url_outcomes] == [X_URL] and counter.get(X_URL) == 1


def test_frozen_elements_never_starve_a_due_error(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """60 tokens whose only URL is discord (unsupported: no generator) plus one old error: with the
    old selection (sorted by address, cut at limit) three runs never reached the error."""
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    for i in range(60):
        address = f"A{i:03d}"
        assert store.create_pending_token(TokenProfile(address=address, urls=[f"https://discord.com/invite/c{i}"]), T0)
        eng.recorder.record_url((address, None), f"https://discord.com/invite/c{i}", eng.processor.new_run())
    assert store.create_pending_token(TokenProfile(address="Z", urls=[YT_URL]), T0)
    seed_result(store, "Z", YT_URL, FetchStatus.ERROR, T0 - timedelta(days=2))
    clock.advance(timedelta(hours=2))
    out = retry_run(eng, limit=50)
    assert [(u.token, u.status) for u in out.url_outcomes] == [("Z", FetchStatus.OK)]
    assert counter.total() == 1
    # naming the frozen status explicitly selects it anyway (zero calls: still no generator)
    named = retry_run(eng, statuses=["unsupported"], limit=50)
    assert named.processed == 50 and named.remaining == 10 and counter.total() == 1


def test_skipped_paid_is_a_candidate_only_while_paid_calls_are_on(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    off = build_engine(store, locks, counting_registry(counter), enable_paid=False, clock=clock)
    for i in range(55):
        assert store.create_pending_token(TokenProfile(address=f"P{i:02d}", urls=[f"https://x.com/i/status/{i}"]), T0)
        off.recorder.record_url((f"P{i:02d}", None), f"https://x.com/i/status/{i}", off.processor.new_run())
    assert store.create_pending_token(TokenProfile(address="Z", urls=[GH_URL]), T0)
    seed_result(store, "Z", GH_URL, FetchStatus.ERROR, T0 - timedelta(days=2))
    clock.advance(timedelta(hours=2))
    first = retry_run(off)
    assert [u.token for u in first.url_outcomes] == ["Z"] and counter.total() == 1
    on = build_engine(store, locks, counting_registry(counter), enable_paid=True, clock=clock)
    paid = retry_run(on)
    assert paid.processed == 50 and paid.remaining == 5 and counter.total() == 51


def test_a_backlog_drains_in_k_runs_each_url_once(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """3 x limit due elements, min_interval 0: three runs, every URL processed exactly once."""
    eng = build_engine(store, locks, counting_registry(counter, default=Behaviour("error")), clock=clock)
    for i in range(30):
        url = f"https://github.com/o/r{i}"
        assert store.create_pending_token(TokenProfile(address=f"T{i:02d}", urls=[url]), T0)
        seed_result(store, f"T{i:02d}", url, FetchStatus.ERROR, T0 - timedelta(hours=1, minutes=i))
    seen: list[str] = []
    for run in range(3):
        clock.advance(timedelta(seconds=1))
        out = retry_run(eng, limit=10, min_interval_minutes=0)
        assert out.processed == 10, run
        seen += [u.url for u in out.url_outcomes]
    assert len(seen) == 30 == len(set(seen))
    # oldest first: the first run took the ten oldest
    assert seen[:10] == [f"https://github.com/o/r{i}" for i in range(29, 19, -1)]


def test_a_failing_url_shared_by_six_tokens_costs_at_most_max_attempts(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """Six tokens share an always-503 paid tweet: at most 5 calls in all, and every holder ends
    `exhausted` in the same run."""
    eng = build_engine(store, locks, counting_registry(counter, {X_URL: Behaviour("error")}), clock=clock)
    for i in range(6):
        eng.profiles.add(f"H{i}", [X_URL])
        eng.processor.record(f"H{i}", None, eng.processor.new_run())
    assert counter.get(X_URL) == 1  # the other five adopted the fresh error
    statuses: list[set[FetchStatus]] = []
    for _ in range(8):
        clock.advance(timedelta(minutes=61))
        retry_run(eng)
        statuses.append({_el(store, f"H{i}", X_URL).status for i in range(6)})
    assert counter.get(X_URL) == 5
    assert statuses[-1] == {FetchStatus.EXHAUSTED}
    first_exhausted = next(i for i, s in enumerate(statuses) if FetchStatus.EXHAUSTED in s)
    assert statuses[first_exhausted] == {FetchStatus.EXHAUSTED}  # all six together
    state = store.find_url_state(X_URL)
    assert state is not None and (state.status, state.attempts) == (FetchStatus.EXHAUSTED, 5)
    # a new token holding it later pays nothing
    eng.profiles.add("LATE", [X_URL])
    late = eng.processor.record("LATE", None, eng.processor.new_run())
    assert late.urls[0].status is FetchStatus.EXHAUSTED and not late.urls[0].attempted
    assert counter.get(X_URL) == 5


def test_min_interval_zero_forces_and_named_absorbing_status_escapes(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    _seed(store, eng)
    forced = retry_run(eng, statuses=["error"], min_interval_minutes=0)
    assert forced.processed == 2 and counter.get(X_URL) == 1
    escaped = retry_run(eng, statuses=["invalid"], token_addresses=["B"])
    assert (escaped.processed, escaped.converged) == (1, 1)
    assert _el(store, "B", TG_URL).status is FetchStatus.OK


def test_exhaustion_counts_as_converged(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    assert store.create_pending_token(TokenProfile(address="A", urls=[YT_URL]), T0)
    for i in range(4):
        seed_result(store, "A", YT_URL, FetchStatus.ERROR, T0 - timedelta(hours=10 - i))
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour("error")}), clock=clock)
    out = retry_run(eng)
    assert out.converged == 1 and out.url_outcomes[0].status is FetchStatus.EXHAUSTED
    assert _el(store, "A", YT_URL).attempts == 5


def test_token_addresses_filter(store: SqliteStore, locks: LockManager, counter: MemoryCounter,
                                clock: StepClock) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    _seed(store, eng)
    out = retry_run(eng, token_addresses=["B"])
    assert {u.token for u in out.url_outcomes} == {"B"} and out.processed == 1
    # an empty list means "every token" (the natural unset value of a config list)
    assert retry_run(eng, token_addresses=[]).candidate_urls == 2


def test_token_lock_held_counts_locked_out(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, any_locks, counting_registry(counter), clock=clock)
    _seed(store, eng)
    with any_locks.try_hold("social-record:A", 30):
        out = retry_run(eng)
    assert out.locked_out == 2 and out.processed == 3
    assert [u.status for u in out.url_outcomes if u.token == "A"] == [EngineOutcome.LOCKED_OUT] * 2
    assert counter.get(YT_URL) == 0 and _el(store, "A", YT_URL).status is FetchStatus.PENDING


def test_job_lock_held_means_skipped(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, any_locks, counting_registry(counter), clock=clock)
    _seed(store, eng)
    with any_locks.try_hold(RETRY_LOCK_KEY, 30):
        out = retry_run(eng)
    assert out.skipped == "already running" and out.processed == 0 and counter.total() == 0


def test_a_crashed_retry_runs_lock_and_token_lock_are_waited_out(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """A retry run right after one was killed: the killed run's job lock and its token lock are
    waited for (the token's on the run's second look), and the URLs are recorded, each counted once."""
    from social_recording.locks.extender import LeasingLockManager

    eng = build_engine(store, any_locks, counting_registry(counter), clock=clock, token_lock_wait=20.0,
                       job_lock_wait=20.0)
    _seed(store, eng)
    assert isinstance(any_locks, LeasingLockManager)
    assert any_locks.acquire(RETRY_LOCK_KEY, "crashed-host:1:dead", 1.0) > 0
    assert any_locks.acquire("social-record:A", "crashed-host:1:dead", 2.0) > 0
    run = RunState(timedelta(minutes=60))
    out = retry_run(eng, run=run)
    assert out.skipped is None and out.locked_out == 0 and out.processed == 3
    assert [u.status for u in out.url_outcomes if u.token == "A"] == [FetchStatus.OK] * 2
    assert run.summary().urls == 3 and "locked_out" not in run.summary().by_status


def test_deadline_stops_between_urls(store: SqliteStore, locks: LockManager, counter: MemoryCounter,
                                     clock: StepClock) -> None:
    now = [0.0]

    def on_call(url: str) -> None:
        now[0] += 10.0

    eng = build_engine(store, locks, counting_registry(counter, on_call=on_call), clock=clock,
                       monotonic=lambda: now[0])
    _seed(store, eng)
    out = retry_run(eng, deadline_seconds=15, max_workers=1)
    # YT (0 s -> 10 s), GH (10 s -> 20 s), then the deadline: B's URL is not started
    assert (out.processed, out.remaining, out.stopped_by) == (2, 1, "deadline")


def test_a_deadline_passing_in_the_last_url_leaves_the_raw_values_and_says_so(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """Every selected URL was recorded, but the deadline came before the raw values' turn: the run
    reports "deadline", not "drained", and the next retry tries the raw value."""
    now = [0.0]

    def on_call(url: str) -> None:
        now[0] += 10.0

    eng = build_engine(store, locks, counting_registry(counter, on_call=on_call), clock=clock,
                       monotonic=lambda: now[0])
    raw = "https://t.co/flaky"
    profile = TokenProfile(
        address="A", symbol="A", urls=[YT_URL],
        unresolved=(UnresolvedValue(field="twitter", value=raw, reason="timed out", attempts=1, checked_at=T0),))
    eng.profiles.profiles["A"] = profile
    eng.profiles.resolutions[raw] = [X_URL]
    assert store.create_pending_token(profile, T0)
    seed_result(store, "A", YT_URL, FetchStatus.ERROR, T0)
    clock.advance(timedelta(minutes=61))
    out = retry_run(eng, deadline_seconds=5, max_workers=1)
    assert (out.processed, out.remaining, out.stopped_by, out.unresolved) == (1, 0, "deadline", {})
    doc = store.find_token("A")
    assert doc is not None and [v.value for v in doc.unresolved] == [raw]
    clock.advance(timedelta(minutes=61))
    assert retry_run(eng).unresolved == {"resolved": 1}


def test_parse_retry_statuses() -> None:
    assert parse_retry_statuses(["error", "pending"]) == {FetchStatus.ERROR, FetchStatus.PENDING}


def test_non_canonical_stored_url_is_isolated_within_a_run(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    bad = "HTTP://Example.com/Bad/"
    assert store.create_pending_token(TokenProfile(address="A", urls=[bad, YT_URL, GH_URL]), T0)
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    out = retry_run(eng)
    # a retry cannot change a URL that is not canonical (our bug): it is not selected, and it never
    # holds the queue; the health checks report it as a stuck pending element
    assert sorted(str(u.status) for u in out.url_outcomes) == ["ok", "ok"]
    assert (out.processed, out.converged) == (2, 2)
    el = _el(store, "A", bad)
    assert (el.status, el.attempts) == (FetchStatus.PENDING, 0)
    assert [c.url for c in store.oldest_elements([FetchStatus.PENDING], 5)] == [bad]
    # named explicitly, the token's run isolates it and records nothing
    named = retry_run(eng, statuses=["pending"], token_addresses=["A"])
    assert named.processed == 0


def test_credit_exhaustion_is_shared_by_the_whole_run(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    x_other = "https://x.com/i/status/3"
    assert store.create_pending_token(TokenProfile(address="A", urls=[X_URL]), T0)
    assert store.create_pending_token(TokenProfile(address="B", urls=[x_other, YT_URL]), T0)
    eng = build_engine(store, locks, counting_registry(counter, {X_URL: Behaviour("credit_exhausted")}), clock=clock)
    out = retry_run(eng, max_workers=1)
    assert [(u.token, u.status) for u in out.url_outcomes] == [
        ("A", FetchStatus.ERROR), ("B", FetchStatus.SKIPPED_PAID), ("B", FetchStatus.OK),
    ]
    assert counter.get(x_other) == 0 and counter.get(YT_URL) == 1


def test_a_shortlink_that_fails_twice_then_resolves_joins_the_token(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """The link is kept through transient failures and recorded once it resolves."""
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    raw = "https://t.co/flaky"
    profile = TokenProfile(address="A", symbol="A", image="https://img/a.png", urls=[YT_URL],
                           unresolved=(UnresolvedValue(field="twitter", value=raw, reason="timed out",
                                                       attempts=1, checked_at=T0),))
    eng.profiles.profiles["A"] = profile
    eng.profiles.resolutions[raw] = ["transient", "transient", X_URL]
    first = eng.processor.record("A", None, eng.processor.new_run())
    assert first.unresolved == 1 and [u.url for u in first.urls] == [YT_URL]
    doc = store.find_token("A")
    assert doc is not None and [v.value for v in doc.unresolved] == [raw] and doc.element(X_URL) is None
    results = []
    for _ in range(3):
        clock.advance(timedelta(minutes=61))
        results.append(retry_run(eng).unresolved)
    assert results == [{"retrying": 1}, {"retrying": 1}, {"resolved": 1}]
    doc = store.find_token("A")
    assert doc is not None and doc.unresolved == []
    element = doc.element(X_URL)
    assert element is not None and element.status is FetchStatus.OK and counter.get(X_URL) == 1
    assert [e.url for e in doc.social_urls] == [YT_URL, X_URL]


def test_an_unresolved_value_that_fails_for_good_is_dropped(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock, max_attempts=3)
    raw = "https://bit.ly/gone"
    eng.profiles.profiles["A"] = TokenProfile(
        address="A", image="https://img/a.png",
        unresolved=(UnresolvedValue(field="website", value=raw, attempts=1, checked_at=T0),),
    )
    eng.profiles.resolutions[raw] = ["gone"]
    eng.processor.record("A", None, eng.processor.new_run())
    clock.advance(timedelta(minutes=61))
    assert retry_run(eng).unresolved == {"dropped": 1}
    doc = store.find_token("A")
    assert doc is not None and doc.unresolved == [] and doc.social_urls == []


def test_an_unresolved_value_failing_transiently_forever_is_dropped_after_max_attempts(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock, max_attempts=3)
    raw = "https://bit.ly/down"
    eng.profiles.profiles["A"] = TokenProfile(
        address="A", image="https://img/a.png",
        unresolved=(UnresolvedValue(field="website", value=raw, attempts=1, checked_at=T0),),
    )
    eng.profiles.resolutions[raw] = ["transient"]
    eng.processor.record("A", None, eng.processor.new_run())
    seen = []
    for _ in range(4):
        clock.advance(timedelta(minutes=61))
        seen.append(retry_run(eng).unresolved)
    assert seen == [{"retrying": 1}, {"dropped": 1}, {}, {}]
