"""Per-provider call bounds and a token's URLs recorded side by side (recording/concurrency.py)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from social_recording.dagster_defs.jobs.live import RecordTokensConfig
from social_recording.dagster_defs.jobs.reconcile import ReconcileConfig
from social_recording.dagster_defs.jobs.retry import RetryConfig
from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.base import LockManager
from social_recording.platforms.base import PROVIDER_OF
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.concurrency import (
    DEFAULT_PROVIDER_CONCURRENCY,
    CallSlots,
    check_provider_concurrency,
)
from social_recording.recording.outcomes import EngineOutcome, TokenStatus
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    YT_URL,
    MemoryCounter,
    build_engine,
    counting_registry,
)

GH_URLS = [f"https://github.com/owner/repo{i}" for i in range(6)]


class InFlight:
    """Counts calls in flight per platform and makes each call wait for a partner (a barrier of
    `meet`), so calls that may run side by side really do, whatever the scheduling."""

    def __init__(self, meet: int) -> None:
        self._lock = threading.Lock()
        self._now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self._barrier = threading.Barrier(meet, timeout=20)

    def __call__(self, url: str) -> None:
        key = "github" if "github.com" in url else "other"
        with self._lock:
            self._now[key] += 1
            self.peak[key] = max(self.peak[key], self._now[key])
        try:
            self._barrier.wait()
        finally:
            with self._lock:
                self._now[key] -= 1


def test_defaults_cover_every_provider_paid_lower_free_higher() -> None:
    assert set(DEFAULT_PROVIDER_CONCURRENCY) == set(PROVIDER_OF.values())
    paid = {a.name for a in CATALOGUE.paid_accounts()}
    assert paid >= {"twitterapi", "apify", "urlscan", "neynar"}
    assert max(DEFAULT_PROVIDER_CONCURRENCY[p] for p in paid) < min(DEFAULT_PROVIDER_CONCURRENCY[p]
                                                                    for p in ("youtube", "github"))
    assert DEFAULT_PROVIDER_CONCURRENCY["telegram"] <= 2


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"twitter": 2}, "unknown provider 'twitter'"),
        ({"github": 0}, r"provider_concurrency\['github'\] must be an integer in 1\.\.64, got 0"),
        ({"github": True}, "got True"),
        ({"youtube": 65}, "got 65"),
    ],
)
def test_bad_overrides_are_refused_naming_the_value(overrides: dict[str, int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        check_provider_concurrency(overrides)
    with pytest.raises(ValueError, match=match):
        CallSlots(overrides)


def test_job_configs_take_the_knob_and_validate_it_at_launch() -> None:
    assert ReconcileConfig(provider_concurrency={"github": 3}).provider_concurrency == {"github": 3}
    assert RetryConfig().provider_concurrency == {}
    assert RecordTokensConfig(tokens=[], provider_concurrency={"telegram": 1}).provider_concurrency == {"telegram": 1}
    with pytest.raises(ValueError, match="unknown provider 'twitter'"):
        ReconcileConfig(provider_concurrency={"twitter": 3})


def test_a_tokens_urls_run_side_by_side_within_the_provider_bound(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    meet = InFlight(meet=2)
    eng = build_engine(store, locks, counting_registry(counter, on_call=meet))
    eng.profiles.add("A", GH_URLS)
    run = RunState(calls=CallSlots({"github": 2}))
    out = eng.processor.record("A", None, run)
    assert out.status is TokenStatus.RECORDED
    assert [u.url for u in out.urls] == GH_URLS  # outcomes in URL order, whatever order they finished in
    assert all(u.status is FetchStatus.OK for u in out.urls) and counter.total() == 6
    assert meet.peak["github"] == 2  # side by side (the barrier needs two), never more than the bound
    assert run.calls.peak() == {"github": 2}


def test_the_bound_is_shared_by_every_token_of_the_run(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    meet = InFlight(meet=3)
    eng = build_engine(store, any_locks, counting_registry(counter, on_call=meet))
    for i in range(3):
        eng.profiles.add(f"T{i}", GH_URLS[2 * i : 2 * i + 2])
    run = RunState(calls=CallSlots({"github": 3}))
    threads = [threading.Thread(target=eng.processor.record, args=(f"T{i}", None, run)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert counter.total() == 6 and meet.peak["github"] == 3 and run.calls.peak() == {"github": 3}


def test_one_after_another_when_asked(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    meet = InFlight(meet=1)
    eng = build_engine(store, locks, counting_registry(counter, on_call=meet))
    eng.profiles.add("A", GH_URLS[:3] + [YT_URL])
    run = RunState(calls=CallSlots(per_token=1))
    assert eng.processor.record("A", None, run).status is TokenStatus.RECORDED
    assert sum(meet.peak.values()) == 2 and max(meet.peak.values()) == 1  # github 1, other 1: never together


def test_limit_calls_before_the_run_only(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    run = RunState()
    run.limit_calls({"urlscan": 1})
    assert run.calls.bound("urlscan") == 1 and run.calls.bound("github") == DEFAULT_PROVIDER_CONCURRENCY["github"]
    eng = build_engine(store, locks, counting_registry(counter))
    eng.profiles.add("A", [YT_URL])
    eng.processor.record("A", None, run)
    with pytest.raises(RuntimeError, match="before the run records any URL"):
        run.limit_calls({"urlscan": 2})


def test_retry_batch_takes_the_token_lock_once_and_records_side_by_side(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    meet = InFlight(meet=2)
    eng = build_engine(store, locks, counting_registry(counter, on_call=meet))
    assert store.create_pending_token(TokenProfile(address="A", urls=GH_URLS[:4]))
    run = RunState(calls=CallSlots({"github": 2}))
    out = eng.processor.record_urls("A", [*GH_URLS[:4], GH_URLS[5]], run)
    assert [(u.url, u.status) for u in out] == [*((u, FetchStatus.OK) for u in GH_URLS[:4]),
                                                (GH_URLS[5], EngineOutcome.NO_ELEMENT)]
    assert meet.peak["github"] == 2 and counter.total() == 4


def test_retry_batch_stops_starting_urls(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    eng = build_engine(store, locks, counting_registry(counter))
    assert store.create_pending_token(TokenProfile(address="A", urls=GH_URLS[:3]))
    started: list[str] = []

    def stop() -> bool:
        started.append("asked")
        return len(started) > 1  # the first URL starts, none after it

    out = eng.processor.record_urls("A", GH_URLS[:3], RunState(calls=CallSlots(per_token=1)), stop)
    assert [u.url for u in out] == GH_URLS[:1] and counter.total() == 1
    assert store.find_element("A", GH_URLS[1]) is not None
    el = store.find_element("A", GH_URLS[1])
    assert el is not None and el.status is FetchStatus.PENDING


def test_the_platform_of_every_provider_has_a_bound() -> None:
    slots = CallSlots()
    for platform in Platform:
        provider = PROVIDER_OF.get(platform)
        if provider is not None:
            assert slots.bound(provider) == DEFAULT_PROVIDER_CONCURRENCY[provider]
