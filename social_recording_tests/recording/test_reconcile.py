"""Reconcile as reconcile_job runs it (read the window, then record it): counters, already_seen,
limit / deadline, job lock."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest

from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.locks.base import LockManager
from social_recording.locks.extender import LeasingLockManager
from social_recording.recording.processor import TokenStatus
from social_recording.recording.reconcile import reconcile_lock_key
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    DISCORD_URL,
    GH_URL,
    T0,
    X_URL,
    YT_URL,
    Behaviour,
    FakeProfiles,
    FakeTracker,
    MemoryCounter,
    RangeItem,
    build_engine,
    counting_registry,
    reconcile_run,
)

START, END = T0 - timedelta(days=1), T0


def test_counters_filter_and_already_seen(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    profiles = FakeProfiles()
    profiles.add("A", [YT_URL, DISCORD_URL])
    profiles.add("B", [GH_URL])
    tracker = FakeTracker([
        RangeItem("A", "a", 5), RangeItem("B", "b", 3), RangeItem("C", "c", 2),
        RangeItem("D", "d", 4), RangeItem("E", "e", 3), RangeItem("A", "a", 5),
    ])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles, tracker=tracker)
    assert store.create_pending_token(TokenProfile(address="D", urls=[X_URL]), T0)
    out = reconcile_run(eng, START, END, partition_key="2026-01-01")
    assert (out.scanned, out.filtered, out.already_seen, out.targeted) == (6, 4, 1, 3)
    assert (out.processed, out.failed, out.remaining, out.stopped_by) == (3, 0, 0, "drained")
    assert [t.status for t in out.tokens] == [TokenStatus.RECORDED, TokenStatus.RECORDED, TokenStatus.NO_PROFILE]
    assert out.status_counts == {"ok": 2, "unsupported": 1}
    assert len(out.url_outcomes) == 3
    assert sorted(profiles.reads) == ["A", "B", "E"]  # D is seen: never asked upstream, never touched
    d = store.find_token("D")
    assert d is not None and d.social_urls[0].status is FetchStatus.PENDING
    meta = out.metadata()
    assert meta["already_seen"] == 1 and meta["stopped_by"] == "drained" and meta["urls_ok"] == 2
    assert out.no_profile == 1 and meta["no_profile"] == 1  # E: visible, not silently "processed"
    # a second run finds every recorded token already seen
    again = reconcile_run(eng, START, END, partition_key="2026-01-01")
    assert (again.already_seen, again.targeted, again.processed) == (3, 1, 1)  # E (no profile) stays a target


def test_limit_stops_between_tokens_and_a_rerun_continues(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    for i in range(5):
        profiles.add(f"T{i}", [f"https://example.com/t{i}"])
    tracker = FakeTracker([RangeItem(f"T{i}", None, 3) for i in range(5)])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles, tracker=tracker)
    first = reconcile_run(eng, START, END, limit=2, max_workers=1)
    assert (first.targeted, first.processed, first.remaining, first.stopped_by) == (5, 2, 3, "limit")
    second = reconcile_run(eng, START, END, limit=3, max_workers=2)
    assert (second.already_seen, second.processed, second.remaining, second.stopped_by) == (2, 3, 0, "drained")
    assert counter.total() == 5


def test_deadline_stops_starting_tokens(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    now = [0.0]

    class SlowProfiles(FakeProfiles):
        def read(self, address: str) -> TokenProfile | None:
            now[0] += 10.0  # each token "takes" 10 s of the fake monotonic clock
            return super().read(address)

    profiles = SlowProfiles()
    for i in range(4):
        profiles.add(f"T{i}", [f"https://example.com/t{i}"])
    tracker = FakeTracker([RangeItem(f"T{i}", None, 3) for i in range(4)])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles, tracker=tracker,
                       monotonic=lambda: now[0])
    out = reconcile_run(eng, START, END, deadline_seconds=15, max_workers=1)
    # T0 starts at 0 s, T1 at 10 s, then 20 s >= 15 s: no further token is started
    assert (out.processed, out.remaining, out.stopped_by) == (2, 2, "deadline")
    assert store.find_existing_addresses(["T0", "T1", "T2", "T3"]) == {"T0", "T1"}


def test_job_lock_held_by_a_live_run_past_the_wait_means_skipped(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    """A live holder keeps renewing its lock: after the wait this run records nothing and says so
    (the Dagster report then fails it: test_run_failures.py). The window is read before the lock is
    waited for (the job's first step writes nothing); the recording step records none of it."""
    tracker = FakeTracker([RangeItem("A", None, 3)])
    eng = build_engine(store, any_locks, counting_registry(counter), tracker=tracker, job_lock_wait=0.5)
    eng.profiles.add("A", [YT_URL])
    with any_locks.try_hold(reconcile_lock_key("2026-01-01"), 30):
        started = time.monotonic()
        out = reconcile_run(eng, START, END, partition_key="2026-01-01")
        assert time.monotonic() - started >= 0.5  # it waited for the lock first
        assert out.skipped == "already running" and out.stopped_by is None
        assert (out.targeted, out.processed, out.remaining) == (1, 0, 1) and eng.profiles.reads == []
        assert store.find_existing_addresses(["A"]) == set() and counter.total() == 0
        # another partition of the backfill is not blocked
        other = reconcile_run(eng, START, END, partition_key="2026-01-02")
        assert other.skipped is None and other.processed == 1
    assert reconcile_lock_key("2026-01-01") == "social-reconcile:reconcile:2026-01-01"


def test_tracker_failure_fails_the_run_with_zero_writes(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    tracker = FakeTracker([RangeItem("A", None, 3)], error=RuntimeError("tracker 503 after 3 attempts"))
    eng = build_engine(store, locks, counting_registry(counter), tracker=tracker)
    eng.profiles.add("A", [YT_URL])
    with pytest.raises(RuntimeError, match="503"):
        reconcile_run(eng, START, END, partition_key="p")
    assert store.find_existing_addresses(["A"]) == set() and counter.total() == 0
    # nothing is held: the next run proceeds
    tracker.error = None
    assert reconcile_run(eng, START, END, partition_key="p").processed == 1


def test_one_token_failure_is_counted_not_fatal(store: SqliteStore, locks: LockManager, counter: MemoryCounter) -> None:
    class Flaky(FakeProfiles):
        def read(self, address: str) -> TokenProfile | None:
            if address == "BAD":
                raise RuntimeError("by-addresses failed")
            return super().read(address)

    profiles = Flaky()
    profiles.add("A", [YT_URL])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles,
                       tracker=FakeTracker([RangeItem("BAD", None, 3), RangeItem("A", None, 3)]))
    out = reconcile_run(eng, START, END)
    assert (out.processed, out.failed, out.stopped_by) == (2, 1, "drained")
    assert store.find_existing_addresses(["A", "BAD"]) == {"A"}


def test_parallel_tokens_sharing_one_url_pay_once(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    for i in range(6):
        profiles.add(f"T{i}", [X_URL, f"https://example.com/t{i}"])
    registry = counting_registry(counter, {X_URL: Behaviour("ok", sleep=0.05)})
    eng = build_engine(store, locks, registry, profiles=profiles,
                       tracker=FakeTracker([RangeItem(f"T{i}", None, 3) for i in range(6)]))
    out = reconcile_run(eng, START, END, max_workers=4)
    assert out.processed == 6 and out.status_counts == {"ok": 12}
    assert counter.get(X_URL) == 1
    assert sum(1 for u in out.url_outcomes if u.reused) == 5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window_end": START}, "after window start"),
        ({"min_af_count": 0}, "min_af_count"),
        ({"partition_key": ""}, "partition_key"),
    ],
)
def test_a_bad_window_is_rejected_before_the_tracker_is_asked(
    store: SqliteStore, locks: LockManager, kwargs: dict[str, object], match: str
) -> None:
    tracker = FakeTracker([RangeItem("A", None, 3)])
    eng = build_engine(store, locks, counting_registry(MemoryCounter()), tracker=tracker)
    args: dict[str, object] = {"window_start": START, "window_end": END, **kwargs}
    start, end = args.pop("window_start"), args.pop("window_end")
    assert isinstance(start, datetime) and isinstance(end, datetime)
    with pytest.raises(ValueError, match=match):
        eng.reconcile.read_window(start, end, **args)  # type: ignore[arg-type]
    assert tracker.calls == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"limit": 0}, "limit"),
        ({"max_workers": 0}, "max_workers"),
        ({"max_workers": 33}, "max_workers"),
        ({"deadline_seconds": 0}, "deadline_seconds"),
        ({"window": "2026-01-01"}, "must be a ReconcileWindow"),
    ],
)
def test_bad_recording_arguments_are_rejected_before_anything_is_recorded(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, kwargs: dict[str, object], match: str
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), tracker=FakeTracker([RangeItem("A", None, 3)]))
    eng.profiles.add("A", [YT_URL])
    args: dict[str, object] = {"window": eng.reconcile.read_window(START, END), **kwargs}
    with pytest.raises(ValueError, match=match):
        eng.reconcile.record_window(**args)  # type: ignore[arg-type]
    assert eng.profiles.reads == [] and counter.total() == 0 and store.find_existing_addresses(["A"]) == set()


def _dead_holder(locks: LockManager, key: str, ttl: float) -> None:
    """The lock a crashed process left: taken, never renewed, never released."""
    assert isinstance(locks, LeasingLockManager)
    assert locks.acquire(key, "crashed-host:1:dead", ttl) > 0


def test_a_crashed_runs_window_lock_is_waited_out_and_the_window_recorded(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding: a re-execution right after a run was killed "succeeded" with nothing done,
    because the killed run's window lock made it skip. It waits for the lock to expire instead."""
    profiles = FakeProfiles()
    for name in ("A", "B"):
        profiles.add(name, [f"https://example.com/{name}"])
    eng = build_engine(store, any_locks, counting_registry(counter), profiles=profiles, job_lock_wait=20.0,
                       tracker=FakeTracker([RangeItem("A", "a", 3), RangeItem("B", "b", 3)]))
    key = reconcile_lock_key("2026-01-01")
    _dead_holder(any_locks, key, ttl=3.0)
    # What the run's tries for the window's lock found (not how long they waited: a busy machine may
    # start the run late): held by the dead run at first, then taken after it expired.
    found: list[str] = []
    probe, acquire = any_locks.may_be_free, any_locks.acquire  # type: ignore[attr-defined]

    def probing(k: str) -> bool:
        free = bool(probe(k))
        if k == key and not free:
            found.append("held")
        return free

    def acquiring(k: str, owner: str, ttl: float) -> int:
        fence = int(acquire(k, owner, ttl))
        if k == key:
            found.append("taken" if fence else "held")
        return fence

    monkeypatch.setattr(any_locks, "may_be_free", probing)
    monkeypatch.setattr(any_locks, "acquire", acquiring)
    out = reconcile_run(eng, START, END, partition_key="2026-01-01")
    assert found[0] == "held" and found[-1] == "taken", found
    assert out.skipped is None and (out.processed, out.remaining) == (2, 0)
    assert store.find_existing_addresses(["A", "B"]) == {"A", "B"}


def test_a_token_a_crashed_worker_left_locked_is_recorded_by_the_runs_second_look(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    for name in ("A", "B"):
        profiles.add(name, [f"https://example.com/{name}"])
    eng = build_engine(store, any_locks, counting_registry(counter), profiles=profiles, token_lock_wait=20.0,
                       tracker=FakeTracker([RangeItem("A", "a", 3), RangeItem("B", "b", 3)]))
    _dead_holder(any_locks, "social-record:A", ttl=1.5)
    out = reconcile_run(eng, START, END, partition_key="2026-01-01")
    assert [t.status for t in out.tokens] == [TokenStatus.RECORDED, TokenStatus.RECORDED]
    assert (out.locked_out, out.remaining) == (0, 0) and out.status_counts == {"ok": 2}
    assert counter.total() == 2


def test_a_token_a_live_worker_keeps_locked_stays_locked_out_after_the_second_look(
    store: SqliteStore, any_locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    profiles.add("A", ["https://example.com/A"])
    eng = build_engine(store, any_locks, counting_registry(counter), profiles=profiles, token_lock_wait=0.5,
                       tracker=FakeTracker([RangeItem("A", "a", 3)]))
    with any_locks.try_hold("social-record:A", 30):
        out = reconcile_run(eng, START, END, partition_key="2026-01-01")
    assert [t.status for t in out.tokens] == [TokenStatus.LOCKED_OUT] and out.locked_out == 1
    assert "whole 0.5 s wait" in out.tokens[0].detail and counter.total() == 0
