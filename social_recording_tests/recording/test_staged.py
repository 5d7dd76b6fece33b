"""The two steps of reconcile and retry (read/select, then record) with work done in between, the
bounded-memory mode, the run's summary, and the one log-line formatter."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.locks.base import LockManager
from social_recording.recording.log_line import kv
from social_recording.recording.outcomes import UrlOutcome
from social_recording.recording.processor import TOKEN_LOCK_PREFIX, TokenStatus
from social_recording.recording.reconcile import ReconcileOutcome, reconcile_lock_key, worth_a_line
from social_recording.recording.retry import RETRY_LOCK_KEY
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    GH_URL,
    T0,
    TG_URL,
    YT_URL,
    Behaviour,
    FakeProfiles,
    FakeTracker,
    MemoryCounter,
    RangeItem,
    StepClock,
    build_engine,
    counting_registry,
    record_one_url,
    retry_run,
    seed_result,
)

START, END = T0 - timedelta(days=1), T0


def test_read_then_record_a_window_equals_reconcile_and_skips_what_was_stored_meanwhile(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    profiles.add("A", [YT_URL])
    profiles.add("B", [GH_URL, TG_URL])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles,
                       tracker=FakeTracker([RangeItem("A", "a", 5), RangeItem("B", "b", 4), RangeItem("C", "c", 1)]))
    service = eng.reconcile
    window = service.read_window(START, END, partition_key="2026-01-01", min_af_count=3)
    assert (window.scanned, window.filtered, window.already_seen) == (3, 2, 0)
    assert [t.address for t in window.targets] == ["A", "B"] and counter.total() == 0  # nothing written yet
    assert store.find_existing_addresses(["A", "B"]) == set()

    eng.processor.record("A", "a")  # another run records A in between
    calls = counter.total()
    run = RunState()
    out = service.record_window(window, run=run, keep_url_outcomes=False)
    assert (out.already_seen, out.targeted, out.processed, out.stopped_by) == (1, 1, 1, "drained")
    assert out.tokens == () and out.created == 1  # B recorded: counted, not kept
    assert out.url_outcomes == ()
    assert out.status_counts == {"ok": 2} and counter.total() == calls + 2
    summary = run.summary()
    assert (summary.urls, summary.by_status, summary.attempted, summary.reused) == (2, {"ok": 2}, 2, 0)


def test_a_window_recorded_without_url_outcomes_keeps_only_the_tokens_worth_a_line(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, tmp_path: Path
) -> None:
    """A run's memory does not grow with its window: with `keep_url_outcomes=False` a token recorded
    plainly is counted (processed, created, URL statuses) and nothing of it is kept; a token without a
    profile and one still locked out after the second look are kept (the report names them), in
    the window's order. The counters are those of the same window recorded with everything kept."""
    plain = [f"P{i:02d}" for i in range(30)]
    items = [RangeItem(a, None, 5) for a in plain[:15]] + [RangeItem("E", None, 5), RangeItem("L", None, 5)] + \
            [RangeItem(a, None, 5) for a in plain[15:]]

    def record(keep: bool, into: SqliteStore) -> ReconcileOutcome:
        profiles = FakeProfiles()
        for a in plain:
            profiles.add(a, [f"https://github.com/own{a.lower()}/repo", f"https://t.me/chan{a.lower()}x"])
        profiles.add("L", [GH_URL])  # E has no profile
        eng = build_engine(into, locks, counting_registry(counter), profiles=profiles, tracker=FakeTracker(items),
                           token_lock_wait=0.2)
        window = eng.reconcile.read_window(START, END, partition_key="2026-01-03")
        with locks.try_hold(TOKEN_LOCK_PREFIX + "L", 30):  # another worker holds L throughout
            return eng.reconcile.record_window(window, run=RunState(), max_workers=4, keep_url_outcomes=keep)

    counted = record(False, store)
    assert [(t.address, t.status) for t in counted.tokens] == [("E", TokenStatus.NO_PROFILE),
                                                               ("L", TokenStatus.LOCKED_OUT)]
    assert all(t.urls == () for t in counted.tokens) and counted.url_outcomes == ()
    assert (counted.processed, counted.created, counted.no_profile, counted.locked_out) == (32, 30, 1, 1)
    assert counted.status_counts == {"ok": 60}

    kept = record(True, SqliteStore(tmp_path / "twin.db"))  # the same window, everything kept
    assert len(kept.tokens) == kept.processed == 32 and len(kept.url_outcomes) == 60
    assert (kept.created, kept.status_counts) == (counted.created, counted.status_counts)
    assert kept.metadata() == counted.metadata()
    assert [t.address for t in kept.tokens if worth_a_line(t)] == [t.address for t in counted.tokens]


def test_record_window_is_skipped_while_another_run_holds_the_partition(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    profiles = FakeProfiles()
    profiles.add("A", [YT_URL])
    eng = build_engine(store, locks, counting_registry(counter), profiles=profiles,
                       tracker=FakeTracker([RangeItem("A", "a", 5)]))
    service = eng.reconcile
    window = service.read_window(START, END, partition_key="2026-01-02")
    with locks.try_hold(reconcile_lock_key("2026-01-02"), 30):
        out = service.record_window(window)
    assert out.skipped == "already running" and out.remaining == 1 and out.processed == 0
    assert counter.total() == 0 and store.find_token("A") is None


def test_select_then_record_leaves_elements_another_run_recorded_meanwhile(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter, {YT_URL: Behaviour(outcome="error")}), clock=clock)
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=[YT_URL, GH_URL]), T0)
    seed_result(store, "A", YT_URL, FetchStatus.ERROR, T0 - timedelta(hours=3))
    service = eng.retry
    selection = service.select_due(min_interval_minutes=0)
    assert [c.url for c in selection.candidates] == [GH_URL, YT_URL]  # never recorded first, then oldest
    assert selection.statuses == ("error", "pending", "skipped_paid", "unsupported") and selection.named is None

    record_one_url(eng, "A", GH_URL)  # recorded by someone else in between
    before = counter.total()
    run = RunState(timedelta(0))
    out = service.record_selection(selection, run=run, keep_url_outcomes=False)
    assert out.candidate_urls == 2 and out.changed_meanwhile == 1 and out.processed == 1
    assert counter.total() == before + 1  # only the video was called again
    assert out.url_outcomes == () and out.status_counts == {"error": 1} and out.stopped_by == "drained"
    assert out.metadata()["changed_meanwhile"] == 1 and run.summary().urls == 1

    with locks.try_hold(RETRY_LOCK_KEY, 30):
        skipped = service.record_selection(service.select_due(min_interval_minutes=0))
    assert skipped.skipped == "already running" and skipped.processed == 0


def test_select_then_record_keeps_every_outcome_unless_asked_not_to(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    assert store.create_pending_token(TokenProfile(address="A", urls=[YT_URL, GH_URL]), T0)
    out = retry_run(eng, min_interval_minutes=0)
    assert out.processed == 2 and len(out.url_outcomes) == 2 and out.status_counts == {"ok": 2}
    assert out.changed_meanwhile == 0


def test_one_log_line_format() -> None:
    assert kv("url_outcome", token="A", detail="two words", empty="") == 'url_outcome token=A detail="two words" empty=""'
    assert kv(event="token_failed", error="KeyError") == "event=token_failed error=KeyError"
    assert kv("x", detail="line one\nline two") == 'x detail="line one line two"'  # one line, always


def test_a_runs_listener_hears_every_outcome_and_the_interruption(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock
) -> None:
    """The use cases tell a run's listener (a Dagster stage's run log, in production) about each URL
    outcome they count and about an interruption; without one, the interruption goes to the log."""

    class Listener:
        def __init__(self) -> None:
            self.outcomes: list[str] = []
            self.messages: list[str] = []

        def noted(self, outcome: UrlOutcome) -> None:
            self.outcomes.append(outcome.url)

        def interrupted(self, message: str) -> None:
            self.messages.append(message)

    eng = build_engine(store, locks, counting_registry(counter), clock=clock)
    assert store.create_pending_token(TokenProfile(address="A", urls=[YT_URL, GH_URL]), T0)
    listener = Listener()
    run = RunState(timedelta(0), listener=listener)
    out = retry_run(eng, min_interval_minutes=0, run=run)
    assert sorted(listener.outcomes) == sorted([YT_URL, GH_URL]) and out.processed == 2
    assert run.summary().urls == 2
    run.interrupted("run interrupted: 0 finished, 0 in flight, 1 not started")
    assert listener.messages == ["run interrupted: 0 finished, 0 in flight, 1 not started"]
