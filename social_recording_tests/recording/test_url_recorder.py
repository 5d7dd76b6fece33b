"""record_url: status mapping, paid switches, URL lock wait, lease loss and fencing, the attempt budget."""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import timedelta

import pytest

from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import SocialUrl, TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.base import Lease, LockManager
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.outcomes import EngineOutcome, OutcomeStatus, TokenOutcome, TokenStatus
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import URL_LOCK_TTL_S, URL_LOCK_WAIT_S, UrlRecorder
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    DISCORD_URL,
    GH_URL,
    T0,
    WEB_URL,
    X_URL,
    X_URL_2,
    YT_URL,
    Behaviour,
    MemoryCounter,
    StepClock,
    build_engine,
    counting_registry,
    record_one_url,
    seed_result,
)


def _token(store: SqliteStore, address: str, urls: list[str]) -> None:
    assert store.create_pending_token(TokenProfile(address=address, symbol=f"${address}", urls=urls), T0)


def _el(store: SqliteStore, address: str, url: str) -> SocialUrl:
    doc = store.find_token(address)
    assert doc is not None
    el = doc.element(url)
    assert el is not None
    return el


def test_lock_constants_and_defaults() -> None:
    assert URL_LOCK_TTL_S == 180 and URL_LOCK_WAIT_S == 180
    params = inspect.signature(UrlRecorder).parameters
    assert params["url_lock_wait"].default == URL_LOCK_WAIT_S
    assert params["url_lock_ttl"].default == URL_LOCK_TTL_S
    assert params["max_attempts"].default == 5


@pytest.mark.parametrize(
    ("outcome", "reported", "stored", "attempts"),
    [
        ("ok", FetchStatus.OK, FetchStatus.OK, 1),
        ("not_found", FetchStatus.NOT_FOUND, FetchStatus.NOT_FOUND, 1),
        ("blocked", FetchStatus.BLOCKED, FetchStatus.BLOCKED, 1),
        ("error", FetchStatus.ERROR, FetchStatus.ERROR, 1),
        ("credit_exhausted", FetchStatus.ERROR, FetchStatus.ERROR, 1),
        ("invalid", FetchStatus.INVALID, FetchStatus.INVALID, 1),  # the contract broke on a response we fetched
        # a bug of ours after the request left: an engine failure, recorded as a call so the back-off holds
        ("crash", EngineOutcome.FAILED, FetchStatus.ERROR, 1),
        ("unattempted_error", FetchStatus.ERROR, FetchStatus.ERROR, 0),
        ("contract_unattempted", FetchStatus.INVALID, FetchStatus.INVALID, 0),
        # a bug of ours before any request: an engine failure, attempts never guessed; the element is an
        # `error` whose cause says so (counted per URL, so it cannot be selected forever)
        ("bug_before_request", EngineOutcome.FAILED, FetchStatus.ERROR, 0),
    ],
)
def test_status_mapping_and_attempts(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock,
    outcome: str, reported: OutcomeStatus, stored: FetchStatus, attempts: int,
) -> None:
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour(outcome)}), clock=clock)
    _token(store, "A", [YT_URL])
    run = RunState()
    out = eng.recorder.record_url(("A", "$A"), YT_URL, run)
    assert out.status is reported
    assert out.attempted is (attempts == 1)
    el = _el(store, "A", YT_URL)
    assert (el.status, el.attempts) == (stored, attempts)
    assert el.attempted_at == (T0 if attempts else None)
    assert "SECRET123" not in out.detail  # a foreign exception is named by class only
    links = store.find_links("A", YT_URL)
    assert (len(links) > 0) is (stored is FetchStatus.OK)
    if outcome == "invalid":
        assert store.count_objects(ObjectKind.CONTENT) == 0  # plan() ran before any write
    assert run.engine_failures == int(reported is EngineOutcome.FAILED)


def test_attempted_comes_from_the_http_layer_not_the_generator(
    store: SqliteStore, locks: LockManager, clock: StepClock
) -> None:
    """A generator that claims a call it never made (or hides one it made) does not decide attempts."""
    from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
    from social_recording.outbound import observe
    from social_recording.platforms.base import GenerateContext, GenerateResult, GeneratorRegistry

    class Liar:
        platform = Platform.YOUTUBE

        def __init__(self, send: bool) -> None:
            self.send = send

        def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
            if self.send:
                observe.before_request(service="youtube", paid=False)
                observe.request_sent(service="youtube", paid=False)
            obj = SocialObject(platform=Platform.YOUTUBE, platform_key=f"k:{url}", subtype="video")
            return GenerateResult(SocialGraph(groups=[GraphGroup(ref="r", content=obj)]), attempted=not self.send)

    for send, address in ((False, "A"), (True, "B")):
        url = f"{YT_URL[:-1]}{'xy'[send]}"
        eng = build_engine(store, locks, GeneratorRegistry.of({Platform.YOUTUBE: Liar(send)}), clock=clock)
        _token(store, address, [url])
        out = eng.recorder.record_url((address, None), url, RunState())
        assert out.status is FetchStatus.OK and out.attempted is send
        assert _el(store, address, url).attempts == int(send)


def test_generator_gets_token_context(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    registry = counting_registry(counter)
    eng = build_engine(store, locks, registry)
    _token(store, "A", [GH_URL])
    eng.recorder.record_url(("A", None), GH_URL, RunState())
    gen = registry.get(Platform.GITHUB)
    assert gen is not None
    ctx = gen.contexts[-1]  # type: ignore[attr-defined]
    assert (ctx.token_address, ctx.token_symbol) == ("A", "$A")  # symbol from our document


def test_paid_disabled_is_skipped_paid_with_zero_calls(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), enable_paid=False)
    _token(store, "A", [X_URL, WEB_URL, YT_URL])
    out = eng.processor.record("A", None, RunState())
    assert [u.status for u in out.urls] == [FetchStatus.SKIPPED_PAID, FetchStatus.SKIPPED_PAID, FetchStatus.OK]
    assert counter.get(X_URL) == 0 and counter.get(WEB_URL) == 0 and counter.get(YT_URL) == 1
    el = _el(store, "A", X_URL)
    assert (el.attempts, el.attempted_at) == (0, None)


def test_discord_is_unsupported_with_zero_calls(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    eng = build_engine(store, locks, counting_registry(counter))
    _token(store, "A", [DISCORD_URL])
    out = eng.recorder.record_url(("A", None), DISCORD_URL, RunState())
    assert out.status is FetchStatus.UNSUPPORTED and not out.attempted
    assert counter.total() == 0
    assert _el(store, "A", DISCORD_URL).attempts == 0


def test_credit_exhausted_skips_the_rest_of_this_runs_calls_to_that_account(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    """twitterapi's 402 stops this run's further twitterapi calls (`skipped_paid`, naming the account);
    another paid account's credit is its own, so urlscan is still called."""
    eng = build_engine(store, locks, counting_registry(counter, {X_URL: Behaviour("credit_exhausted")}))
    _token(store, "A", [X_URL, X_URL_2, YT_URL, WEB_URL])
    run = RunState(calls=CallSlots(per_token=1))  # in URL order: "the rest" is well defined
    out = eng.processor.record("A", None, run)
    assert [u.status for u in out.urls] == [
        FetchStatus.ERROR, FetchStatus.SKIPPED_PAID, FetchStatus.OK, FetchStatus.OK,
    ]
    assert run.exhausted("twitterapi") and not run.exhausted("urlscan")
    assert out.urls[1].detail == "twitterapi credit exhausted earlier in this run"
    assert counter.get(X_URL) == 1 and counter.get(X_URL_2) == 0 and counter.get(WEB_URL) == 1
    assert _el(store, "A", X_URL).attempts == 1
    assert _el(store, "A", X_URL_2).attempts == 0
    # the flag is run-scoped: the next run calls the paid URL again
    again = record_one_url(eng, "A", X_URL_2, RunState())
    assert again.status is FetchStatus.OK and counter.get(X_URL_2) == 1


def test_free_provider_quota_stops_only_that_provider(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    """YouTube's quotaExceeded is CREDIT_EXHAUSTED from a free provider: the run's further YouTube
    URLs are left `error` with no call and no attempt burnt; paid URLs are not affected."""
    yt_2 = "https://youtube.com/watch?v=bcdefghijkl"
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour("credit_exhausted")}))
    _token(store, "A", [YT_URL, yt_2, X_URL, GH_URL])
    run = RunState(calls=CallSlots(per_token=1))  # in URL order: "further" is well defined
    out = eng.processor.record("A", None, run)
    assert [u.status for u in out.urls] == [FetchStatus.ERROR, FetchStatus.ERROR, FetchStatus.OK, FetchStatus.OK]
    assert [u.attempted for u in out.urls] == [True, False, True, True]
    assert run.exhausted("youtube") and not run.exhausted("twitterapi")
    assert counter.get(YT_URL) == 1 and counter.get(yt_2) == 0 and counter.get(X_URL) == 1
    assert (_el(store, "A", yt_2).attempts, _el(store, "A", yt_2).attempted_at) == (0, None)
    assert "quota exhausted" in out.urls[1].detail


def test_exhausted_after_max_attempts(store: SqliteStore, locks: LockManager, counter: MemoryCounter,
                                      clock: StepClock) -> None:
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour("error")}),
                       max_attempts=3, clock=clock)
    _token(store, "A", [YT_URL])
    seen = []
    for _ in range(3):
        out = eng.processor.record("A", None, RunState())
        seen.append(out.urls[0].status)
        clock.advance(timedelta(minutes=61))
    assert seen == [FetchStatus.ERROR, FetchStatus.ERROR, FetchStatus.EXHAUSTED]
    el = _el(store, "A", YT_URL)
    assert (el.status, el.attempts) == (FetchStatus.EXHAUSTED, 3)
    # absorbing: the live path never reopens it
    assert eng.processor.record("A", None, RunState()).status is TokenStatus.UP_TO_DATE
    assert counter.get(YT_URL) == 3


def test_v4_url_lock_wait_exceeded_leaves_pending_and_goes_on(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    """V-4 with the wait shortened through the parameter: the held URL stays as it was (attempts
    unchanged, no call), the token's other URL is processed."""
    eng = build_engine(store, any_locks, counting_registry(counter), url_lock_wait=0.2)
    _token(store, "A", [X_URL, YT_URL])
    with any_locks.try_hold(f"social-url:{X_URL}", 30) as other:
        assert other.held
        out = eng.processor.record("A", None, RunState())
    assert [u.status for u in out.urls] == [EngineOutcome.LOCKED, FetchStatus.OK]
    el = _el(store, "A", X_URL)
    assert (el.status, el.attempts, el.attempted_at) == (FetchStatus.PENDING, 0, None)
    assert counter.get(X_URL) == 0 and counter.get(YT_URL) == 1
    # the next run completes it
    again = eng.processor.record("A", None, RunState())
    assert [u.status for u in again.urls] == [FetchStatus.OK]


def test_v4_locked_error_element_keeps_status_and_attempts(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), url_lock_wait=0.1, clock=clock)
    _token(store, "A", [YT_URL])
    seed_result(store, "A", YT_URL, FetchStatus.ERROR, T0 - timedelta(hours=2))
    with locks.try_hold(f"social-url:{YT_URL}", 30):
        out = eng.recorder.record_url(("A", None), YT_URL, RunState())
    assert out.status is EngineOutcome.LOCKED
    el = _el(store, "A", YT_URL)
    assert (el.status, el.attempts, el.attempted_at) == (FetchStatus.ERROR, 1, T0 - timedelta(hours=2))


def test_a_waiter_after_a_fresh_error_adopts_it_without_calling(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """A failing URL is bought once per back-off window, however many tokens hold it: the waiter that
    finds a fresh error records it (attempts unchanged, no call); after the back-off the URL is
    called once more, and its other holders adopt that answer."""
    a_calling = threading.Event()

    def on_call(url: str) -> None:
        a_calling.set()

    registry = counting_registry(counter, {X_URL: Behaviour("ok", sleep=0.3, flaky=1)}, on_call=on_call)
    eng = build_engine(store, any_locks, registry, clock=clock)
    _token(store, "A", [X_URL])
    _token(store, "B", [X_URL])
    results: dict[str, TokenOutcome] = {}
    ta = threading.Thread(target=lambda: results.setdefault("A", eng.processor.record("A", None, RunState())))
    ta.start()
    assert a_calling.wait(30)
    tb = threading.Thread(target=lambda: results.setdefault("B", eng.processor.record("B", None, RunState())))
    tb.start()
    ta.join(30)
    tb.join(30)
    assert results["A"].urls[0].status is FetchStatus.ERROR
    b = results["B"].urls[0]
    assert b.status is FetchStatus.ERROR and not b.attempted and "back-off" in b.detail
    assert counter.get(X_URL) == 1
    assert (_el(store, "B", X_URL).attempts, _el(store, "B", X_URL).attempted_at) == (0, None)
    clock.advance(timedelta(minutes=61))
    again = eng.processor.record("B", None, RunState())
    assert again.urls[0].status is FetchStatus.OK and counter.get(X_URL) == 2
    assert store.find_url_state(X_URL) is not None and store.find_url_state(X_URL).attempts == 2  # type: ignore[union-attr]
    reused = eng.processor.record("A", None, RunState())
    assert reused.urls[0].status is FetchStatus.OK and reused.urls[0].reused and counter.get(X_URL) == 2


class _LosingLocks:
    """Wraps a real lock manager; hands out URL leases the test can mark lost mid-flight."""

    def __init__(self, inner: LockManager) -> None:
        self.inner = inner
        self.last: Lease | None = None

    def try_hold(self, key: str, ttl: float) -> AbstractContextManager[Lease]:
        return self.inner.try_hold(key, ttl)

    @contextmanager
    def _wrap(self, cm: AbstractContextManager[Lease]) -> Iterator[Lease]:
        with cm as lease:
            self.last = lease
            yield lease

    def hold_within(self, key: str, ttl: float, wait: float) -> AbstractContextManager[Lease]:
        return self._wrap(self.inner.hold_within(key, ttl, wait))

    def close(self) -> None:
        self.inner.close()


def test_a_result_paid_under_a_lease_reported_lost_is_written_when_nobody_newer_wrote(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    """One failed renewal must not throw away a paid result: the fenced write decides, and nobody
    with a newer token wrote, so it is accepted; the next run makes no call."""
    wrapped = _LosingLocks(locks)

    def on_call(url: str) -> None:
        assert wrapped.last is not None
        wrapped.last.mark_lost("test: renewal failed")

    eng = build_engine(store, wrapped, counting_registry(counter, on_call=on_call))
    _token(store, "A", [X_URL])
    out = eng.recorder.record_url(("A", None), X_URL, RunState())
    assert out.status is FetchStatus.OK and out.attempted and out.lease_lost
    assert "written after the URL lock was reported lost" in out.detail
    el = _el(store, "A", X_URL)
    assert (el.status, el.attempts) == (FetchStatus.OK, 1)
    assert store.find_links("A", X_URL)
    assert eng.processor.record("A", None, RunState()).status is TokenStatus.UP_TO_DATE
    assert counter.get(X_URL) == 1


def test_a_stale_holder_is_fenced_out_and_writes_nothing(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    """While the first holder is inside its call, its key expires and a second holder takes the URL
    (a larger fence) and records ok. The first holder's result is refused: nothing changes, and its
    stale `error` never overwrites the fresh `ok`."""
    _token(store, "A", [YT_URL])
    _token(store, "B", [YT_URL])
    second = build_engine(store, any_locks, counting_registry(counter))
    first_locks = _LosingLocks(any_locks)

    def on_call(url: str) -> None:
        lease = first_locks.last
        assert lease is not None
        _drop_key(any_locks, lease.key, lease.owner)  # the first holder's key expires mid-call
        taken = second.recorder.record_url(("B", None), url, RunState())
        assert taken.status is FetchStatus.OK

    first = build_engine(store, first_locks, counting_registry(counter, {YT_URL: Behaviour("error")}, on_call=on_call))
    out = first.recorder.record_url(("A", None), YT_URL, RunState())
    assert out.status is EngineOutcome.LOST and out.attempted
    assert "newer holder" in out.detail
    assert _el(store, "A", YT_URL).status is FetchStatus.PENDING  # refused: nothing changed for A
    assert _el(store, "B", YT_URL).status is FetchStatus.OK
    state = store.find_url_state(YT_URL)
    assert state is not None and state.status is FetchStatus.OK and state.source_token == "B"
    assert state.attempts == 1


def _drop_key(locks: LockManager, key: str, owner: str) -> None:
    """Release a key behind its holder's back, as an expiry would."""
    release = locks.release
    assert release(key, owner)


def test_reuse_under_a_lease_reported_lost_is_written_when_nobody_newer_wrote(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    _token(store, "A", [YT_URL])
    _token(store, "B", [YT_URL])
    build_engine(store, locks, counting_registry(counter)).recorder.record_url(("A", None), YT_URL, RunState())

    class LostAtOnce(_LosingLocks):
        @contextmanager
        def _wrap(self, cm: AbstractContextManager[Lease]) -> Iterator[Lease]:
            with cm as lease:
                lease.mark_lost("test: gone")
                yield lease

    eng = build_engine(store, LostAtOnce(locks), counting_registry(counter))
    out = eng.recorder.record_url(("B", None), YT_URL, RunState())
    assert out.status is FetchStatus.OK and out.reused
    assert len(store.find_links("B", YT_URL)) == len(store.find_links("A", YT_URL)) > 0
    assert counter.get(YT_URL) == 1


def test_a_lease_lost_before_the_call_makes_no_call(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    class LostAtOnce(_LosingLocks):
        @contextmanager
        def _wrap(self, cm: AbstractContextManager[Lease]) -> Iterator[Lease]:
            with cm as lease:
                lease.mark_lost("test: gone")
                yield lease

    eng = build_engine(store, LostAtOnce(locks), counting_registry(counter))
    _token(store, "A", [X_URL])
    out = eng.recorder.record_url(("A", None), X_URL, RunState())
    assert out.status is EngineOutcome.LOST and not out.attempted
    assert counter.total() == 0 and _el(store, "A", X_URL).status is FetchStatus.PENDING


def test_ownership_is_checked_at_the_backend_right_before_a_paid_call(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    """The local flag says nothing (the renewal thread had no chance to run), but the key is no
    longer ours at the backend: the paid request is never sent."""
    wrapped = _LosingLocks(any_locks)
    eng = build_engine(store, wrapped, counting_registry(counter))
    _token(store, "A", [X_URL, YT_URL])
    real_confirm: list[bool] = []

    def steal(url: str) -> None:
        raise AssertionError("no call may be made")

    class StealBeforeCall(_LosingLocks):
        @contextmanager
        def _wrap(self, cm: AbstractContextManager[Lease]) -> Iterator[Lease]:
            with cm as lease:
                _drop_key(any_locks, lease.key, lease.owner)
                with any_locks.try_hold(lease.key, 30) as thief:
                    assert thief.held and thief.fence > lease.fence
                    real_confirm.append(lease.lost)
                    yield lease

    eng = build_engine(store, StealBeforeCall(any_locks), counting_registry(counter, on_call=steal))
    out = eng.recorder.record_url(("A", None), X_URL, RunState())
    assert real_confirm == [False]  # locally nothing was known
    assert out.status is EngineOutcome.LOST and not out.attempted
    assert "right before a paid" in out.detail
    assert counter.total() == 0 and _el(store, "A", X_URL).status is FetchStatus.PENDING


def test_unknown_element_non_canonical_and_already_ok_make_no_call(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    eng = build_engine(store, locks, counting_registry(counter))
    _token(store, "A", [YT_URL])
    run = RunState()
    assert eng.recorder.record_url(("A", None), GH_URL, run).status is EngineOutcome.NO_ELEMENT
    assert eng.recorder.record_url(("Z", None), YT_URL, run).status is EngineOutcome.NO_ELEMENT
    assert eng.recorder.record_url(("A", None), "HTTP://WWW.YouTube.com/x/", run).status is EngineOutcome.INVALID_URL
    seed_result(store, "A", YT_URL, FetchStatus.OK, T0)
    out = eng.recorder.record_url(("A", None), YT_URL, run)
    assert (out.status, out.detail, out.attempted) == (FetchStatus.OK, "already ok", False)
    assert counter.total() == 0


def test_stale_snapshot_is_not_called_again(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    """An element recorded by someone else after the caller selected it is left as it is."""
    eng = build_engine(store, locks, counting_registry(counter))
    _token(store, "A", [YT_URL])
    snapshot = store.find_token("A")
    assert snapshot is not None
    seed_result(store, "A", YT_URL, FetchStatus.ERROR, T0)
    out = eng.recorder.record_url(snapshot, YT_URL, RunState())
    assert out.status is FetchStatus.ERROR and not out.attempted
    assert counter.total() == 0 and _el(store, "A", YT_URL).attempts == 1


def test_one_structured_log_line_per_url(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, caplog: pytest.LogCaptureFixture
) -> None:
    eng = build_engine(store, locks, counting_registry(counter))
    _token(store, "A", [YT_URL, DISCORD_URL])
    with caplog.at_level(logging.INFO, logger="social_recording.recording"):
        eng.processor.record("A", None, RunState())
    lines = [r.getMessage() for r in caplog.records if "event=url_recorded" in r.getMessage()]
    assert len(lines) == 2
    # A token's URLs are recorded side by side: one line each, in the order they finish.
    yt = next(line for line in lines if f"url={YT_URL}" in line)
    discord = next(line for line in lines if f"url={DISCORD_URL}" in line)
    assert f"token=A url={YT_URL} platform=youtube status=ok attempted=True reused=False" in yt
    assert "waited_ms=" in yt and "took_ms=" in yt
    assert "status=unsupported attempted=False" in discord


def test_run_state_counts(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    eng = build_engine(store, locks, counting_registry(counter), enable_paid=False)
    _token(store, "A", [YT_URL, X_URL, DISCORD_URL])
    run = RunState()
    eng.processor.record("A", None, run)
    assert run.status_counts() == {"ok": 1, "skipped_paid": 1, "unsupported": 1}
    assert run.attempted == 1 and run.reused == 0


@pytest.mark.parametrize("kwargs", [{"max_attempts": 0}, {"url_lock_ttl": 0}, {"url_lock_wait": -1}])
def test_recorder_rejects_bad_settings(store: SqliteStore, locks: LockManager, kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        build_engine(store, locks, counting_registry(MemoryCounter()), **kwargs)  # type: ignore[arg-type]


def test_lock_backend_failure_is_isolated_to_that_url(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    class DownForOneUrl(_LosingLocks):
        def hold_within(self, key: str, ttl: float, wait: float) -> AbstractContextManager[Lease]:
            if key.endswith(X_URL):
                raise ConnectionError("lock backend unreachable")
            return super().hold_within(key, ttl, wait)

    eng = build_engine(store, DownForOneUrl(locks), counting_registry(counter))
    _token(store, "A", [X_URL, YT_URL])
    out = eng.processor.record("A", None, RunState())
    assert [u.status for u in out.urls] == [EngineOutcome.FAILED, FetchStatus.OK]
    assert out.urls[0].detail == "ConnectionError"
    assert _el(store, "A", X_URL).status is FetchStatus.PENDING and counter.get(X_URL) == 0
