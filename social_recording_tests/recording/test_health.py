"""The health figures and checks over a real SQLite store, at a fixed `now`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenProfile
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import Platform, parse_canonical
from social_recording.recording.health import (
    STARVED_AFTER,
    STUCK_PENDING_AFTER,
    ExhaustedBaseline,
    RunFigures,
    Severity,
    StoreFigures,
    check_exhausted_growth,
    check_paid_once,
    check_starved_retries,
    check_stuck_pending,
    next_retry,
    next_tick,
    oldest_waiting,
    paid_ledger_figures,
)
from social_recording.recording.outcomes import UrlOutcome
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import URL_LOCK_TTL_S
from social_recording.sandbox.ledger import LedgerEntry
from social_recording.store import SqliteStore, Store
from social_recording.store.base import ElementWrite, UrlWrite

NOW = datetime(2026, 11, 20, 12, 30, tzinfo=UTC)
HOUR = timedelta(hours=1)
ALL_FREE = frozenset({Platform.GITHUB, Platform.TELEGRAM, Platform.YOUTUBE})

GH = "https://github.com/org/repo"
TG = "https://t.me/coinchat"
YT = "https://youtube.com/watch?v=abcdefghijk"
DISCORD = "https://discord.com/invite/coin"
X1 = "https://x.com/i/status/1"


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    s = SqliteStore(tmp_path / "store.db")
    yield s
    s.close()


def record(store: Store, address: str, url: str, status: FetchStatus, at: datetime, *,
           cause: Cause | None = None, detail: str | None = None, attempts: int = 1) -> None:
    element = store.find_element(address, url)
    assert element is not None
    written = store.apply_url_write(UrlWrite(
        address=address, url=url, platform=parse_canonical(url).platform.value, fence=element.fence + 1, now=at,
        element=ElementWrite(status, attempts, None if cause else at, at, cause, detail),
    ))
    assert written.result.applied


def test_the_bounds_are_what_their_reasons_say() -> None:
    assert timedelta(seconds=URL_LOCK_TTL_S) + timedelta(hours=2) == STUCK_PENDING_AFTER
    assert STARVED_AFTER == DEFAULT_MIN_INTERVAL + 2 * HOUR


def test_store_figures_count_every_status_and_platform(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="A", urls=[GH, TG, DISCORD]), now=NOW - HOUR)
    store.create_pending_token(TokenProfile(address="B", urls=[GH]), now=NOW - HOUR)
    record(store, "A", GH, FetchStatus.OK, NOW)
    record(store, "A", DISCORD, FetchStatus.UNSUPPORTED, NOW, cause=Cause.NO_GENERATOR)
    oid = store.upsert_object(ObjectKind.ACCOUNT, SocialObject(platform=Platform.GITHUB, platform_key="org",
                                                               subtype="org"), now=NOW)
    store.record_first_metrics(ObjectKind.ACCOUNT, oid, {"followers": 3.0}, NOW)

    f = StoreFigures.read(store)

    assert set(f.by_status) == set(FetchStatus)  # all nine, zero included
    assert f.by_status[FetchStatus.OK] == 1 and f.by_status[FetchStatus.PENDING] == 2
    assert f.by_status[FetchStatus.EXHAUSTED] == 0
    assert (f.urls, f.not_converged, f.tokens) == (4, 3, 2)
    assert f.by_platform["github"][FetchStatus.OK] == 1 and f.by_platform["github"][FetchStatus.PENDING] == 1
    assert f.by_platform["discord"][FetchStatus.UNSUPPORTED] == 1
    assert f.objects == {ObjectKind.CONTENT: 0, ObjectKind.ACCOUNT: 1, ObjectKind.VENUE: 0}
    assert (f.metrics, f.links) == (1, 0)


def test_run_figures_come_from_the_run_counters() -> None:
    run = RunState()
    run.note(UrlOutcome("A", GH, "github", FetchStatus.OK, True, False, 0, 0, previous=FetchStatus.PENDING))
    run.note(UrlOutcome("B", GH, "github", FetchStatus.OK, False, True, 0, 0, previous=FetchStatus.PENDING))
    run.note(UrlOutcome("A", TG, "telegram", FetchStatus.ERROR, True, False, 0, 0, previous=FetchStatus.PENDING))
    run.note_paid_requests(2)
    assert RunFigures.of(run) == RunFigures(urls=3, converged=2, calls_made=2, calls_reused=1, paid_calls=2)


def test_a_pending_element_older_than_the_bound_fails_the_stuck_check(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="Fresh", urls=[GH]), now=NOW - HOUR)
    assert check_stuck_pending(store, NOW).passed

    store.create_pending_token(TokenProfile(address="Stuck", urls=[TG, "not-a-canonical-url"]),
                               now=NOW - STUCK_PENDING_AFTER - timedelta(minutes=1))
    check = check_stuck_pending(store, NOW)

    assert not check.passed and check.severity is Severity.ERROR
    assert check.figures["elements"] == 2 and check.figures["oldest_hours"] == pytest.approx(2.07, abs=0.01)
    assert {(e.token, e.url) for e in check.examples} == {("Stuck", TG), ("Stuck", "not-a-canonical-url")}
    assert all("never recorded" in e.waiting_since for e in check.examples)
    assert "2 pending element(s) older than 2 h 03 min" in check.summary


def test_starvation_follows_the_retry_selection(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="A", urls=[GH, TG, YT, DISCORD, X1]), now=NOW - 10 * HOUR)
    long_ago = NOW - STARVED_AFTER - timedelta(minutes=5)
    record(store, "A", GH, FetchStatus.ERROR, long_ago, detail="HTTP 503")       # due long ago: starving
    record(store, "A", TG, FetchStatus.ERROR, NOW - 2 * HOUR)                      # due an hour ago: not yet
    record(store, "A", YT, FetchStatus.OK, long_ago)                               # final
    record(store, "A", DISCORD, FetchStatus.UNSUPPORTED, long_ago, cause=Cause.NO_GENERATOR)  # no generator
    record(store, "A", X1, FetchStatus.SKIPPED_PAID, long_ago, cause=Cause.PAID_DISABLED)     # paid off

    check = check_starved_retries(store, NOW, enable_paid=False, usable_platforms=ALL_FREE)

    assert not check.passed and check.severity is Severity.WARN
    assert check.figures["elements"] == 1
    (example,) = check.examples
    assert (example.token, example.url, example.status, example.detail) == ("A", GH, "error", "HTTP 503")
    # With paid calls on, the skipped paid element is the retry job's to take too, so it starves as well.
    with_paid = check_starved_retries(store, NOW, enable_paid=True, usable_platforms=ALL_FREE)
    assert {e.url for e in with_paid.examples} == {GH, X1}


def test_a_never_recorded_element_starves_from_its_creation(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="A", urls=[GH]), now=NOW - HOUR)
    assert check_starved_retries(store, NOW, enable_paid=False, usable_platforms=ALL_FREE).passed
    store.create_pending_token(TokenProfile(address="B", urls=[GH]), now=NOW - STARVED_AFTER - HOUR)
    check = check_starved_retries(store, NOW, enable_paid=False, usable_platforms=ALL_FREE)
    assert [e.token for e in check.examples] == ["B"]


def test_exhausted_growth_against_the_baseline() -> None:
    first = check_exhausted_growth(7, None, NOW, max_per_hour=5)
    assert first.passed and "no earlier observation" in first.summary

    within = check_exhausted_growth(12, ExhaustedBaseline(7, NOW - HOUR), NOW, max_per_hour=5)
    assert within.passed and within.figures["growth"] == 5

    burst = check_exhausted_growth(13, ExhaustedBaseline(7, NOW - 10 * timedelta(minutes=1)), NOW, max_per_hour=5)
    assert not burst.passed and burst.severity is Severity.WARN
    assert burst.figures == {"exhausted": 13, "growth": 6, "allowed": 5.0, "window_hours": 0.17}

    # A baseline three hours old allows three hours' worth.
    assert check_exhausted_growth(21, ExhaustedBaseline(7, NOW - 3 * HOUR), NOW, max_per_hour=5).passed
    assert not check_exhausted_growth(23, ExhaustedBaseline(7, NOW - 3 * HOUR), NOW, max_per_hour=5).passed
    # Fewer exhausted than before (a retry named `exhausted`) is no growth.
    assert check_exhausted_growth(2, ExhaustedBaseline(7, NOW - HOUR), NOW, max_per_hour=0).passed


def _line(minutes: float, subject: str, status: int = 200, *, paid: bool = True,
          service: str = "twitterapi") -> LedgerEntry:
    return LedgerEntry(ts=NOW + timedelta(minutes=minutes), service=service, method="GET",
                       url=f"https://{service}.example/", subject=subject, status=status, paid=paid)


def test_paid_once_per_subject_sets_retries_after_a_failure_aside() -> None:
    lines = [
        _line(0, "tweet:1", 503), _line(60, "tweet:1", 429), _line(120, "tweet:1", 200),  # two retries, then ok
        _line(1, "tweet:2", 200),
        _line(2, "https://coin.example/", 200, service="urlscan"),
        _line(3, "result:abc", 200, service="urlscan"),  # the scan's poll: billed with it, never a repeat
        _line(4, "repos/org/repo", 200, paid=False, service="github"),
        _line(5, "repos/org/repo", 200, paid=False, service="github"),  # free: never counted
    ]
    figures = paid_ledger_figures(lines, second_steps=("result:",))
    assert (figures.paid_requests, figures.distinct_subjects, figures.retries_after_failure) == (5, 3, 2)
    good = check_paid_once(figures)
    assert good.passed
    assert good.figures == {"paid_requests": 5, "distinct_paid_subjects": 3, "paid_requests_per_subject": 1.0,
                            "paid_requests_per_subject_with_retries": 1.67, "retries_after_failure": 2,
                            "paid_again_after_answer": 0}
    assert check_paid_once(paid_ledger_figures([])).passed


def test_paying_again_for_an_answer_fails_the_ledger_check() -> None:
    secret_subject = "https://coin.example/?api_key=S3cret"
    lines = [_line(0, secret_subject, 400, service="urlscan"),     # answered: DNS error is an answer
             _line(30, secret_subject, 200, service="urlscan"),    # paid again for it
             _line(0, "tweet:7", 200),
             _line(DEDUPE_TTL / timedelta(minutes=1) + 1, "tweet:7", 200)]  # past the dedupe TTL: a fresh call
    figures = paid_ledger_figures(lines)
    bad = check_paid_once(figures)
    assert not bad.passed and bad.severity is Severity.ERROR
    assert bad.figures["paid_requests_per_subject"] == 1.5 and bad.figures["paid_again_after_answer"] == 1
    assert bad.subjects == ("urlscan https://coin.example/?api_key=*** x2",)
    assert "S3cret" not in bad.summary + "".join(bad.subjects)


def test_next_retry_and_the_oldest_waiting(store: Store) -> None:
    assert next_tick(NOW) == datetime(2026, 11, 20, 13, 0, tzinfo=UTC)
    empty = next_retry(store, NOW, enable_paid=False, usable_platforms=ALL_FREE)
    assert (empty.due_now, empty.next_due_at) == (0, None)

    store.create_pending_token(TokenProfile(address="A", urls=[GH, TG, DISCORD]), now=NOW - 5 * HOUR)
    record(store, "A", GH, FetchStatus.ERROR, NOW - timedelta(minutes=20), detail="HTTP 503")
    record(store, "A", TG, FetchStatus.OK, NOW - 4 * HOUR)
    record(store, "A", DISCORD, FetchStatus.UNSUPPORTED, NOW - 4 * HOUR, cause=Cause.NO_GENERATOR)

    later = next_retry(store, NOW, enable_paid=False, usable_platforms=ALL_FREE)
    assert later.due_now == 0
    assert later.next_due_at == NOW + timedelta(minutes=40)  # the error's back-off ends then

    store.create_pending_token(TokenProfile(address="B", urls=[YT]), now=NOW - HOUR)
    now_due = next_retry(store, NOW, enable_paid=False, usable_platforms=ALL_FREE)
    assert (now_due.due_now, now_due.next_due_at) == (1, NOW)

    oldest = oldest_waiting(store, NOW, 10)
    assert [(e.address, e.url, e.status) for e in oldest] == [
        ("A", DISCORD, FetchStatus.UNSUPPORTED), ("B", YT, FetchStatus.PENDING), ("A", GH, FetchStatus.ERROR)]
