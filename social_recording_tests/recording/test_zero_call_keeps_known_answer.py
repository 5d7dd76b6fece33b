"""An explicit retry of an absorbing status that makes no call must not overwrite the known answer.

"Explicit" is the run's request (a retry naming the status), never read off the element."""

from __future__ import annotations

from datetime import timedelta

import pytest

from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import RunIntent, Why
from social_recording.locks.base import LockManager
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    T0,
    X_URL,
    X_URL_2,
    Behaviour,
    MemoryCounter,
    build_engine,
    counting_registry,
    record_one_url,
    seed_result,
)


def named_retry(*named: FetchStatus) -> RunState:
    return RunState(request=RunIntent(Why.RETRY_NAMED, since=T0, named=frozenset(named)))


def test_the_same_element_without_a_named_retry_is_left_as_it_is(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    """Reaching an absorbing element without naming it (a run that selected it as something else) is
    no reason to re-examine it: it is left, no call, whatever the paid switch."""
    assert store.create_pending_token(TokenProfile(address="A", urls=[X_URL]), T0)
    seed_result(store, "A", X_URL, FetchStatus.NOT_FOUND, T0 - timedelta(days=30))
    eng = build_engine(store, locks, counting_registry(counter), enable_paid=True)

    out = record_one_url(eng, "A", X_URL, RunState())

    assert (out.status, out.attempted, out.detail) == (FetchStatus.NOT_FOUND, False, "already not_found")
    assert counter.total() == 0


@pytest.mark.parametrize("known", [FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID,
                                   FetchStatus.EXHAUSTED])
def test_retry_with_paid_calls_off_keeps_the_absorbing_status(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter, known: FetchStatus
) -> None:
    assert store.create_pending_token(TokenProfile(address="A", urls=[X_URL]), T0)
    seed_result(store, "A", X_URL, known, T0 - timedelta(days=30))
    eng = build_engine(store, locks, counting_registry(counter), enable_paid=False)

    out = record_one_url(eng, "A", X_URL, named_retry(known))

    assert out.status is known and not out.attempted
    assert "no call made" in out.detail
    assert counter.total() == 0
    doc = store.find_token("A")
    assert doc is not None
    el = doc.element(X_URL)
    assert el is not None and (el.status, el.attempts) == (known, 1)


def test_retry_after_credit_exhaustion_keeps_not_found(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    other = X_URL_2  # the same account's credit: it stops the run's further twitterapi calls
    assert store.create_pending_token(TokenProfile(address="A", urls=[other, X_URL]), T0)
    seed_result(store, "A", X_URL, FetchStatus.NOT_FOUND, T0 - timedelta(days=30))
    eng = build_engine(store, locks, counting_registry(counter, {other: Behaviour("credit_exhausted")}))
    run = named_retry(FetchStatus.NOT_FOUND, FetchStatus.PENDING)

    first = record_one_url(eng, "A", other, run)
    second = record_one_url(eng, "A", X_URL, run)

    assert first.status is FetchStatus.ERROR and run.exhausted("twitterapi")
    assert second.status is FetchStatus.NOT_FOUND and not second.attempted
    assert counter.get(X_URL) == 0


def test_retry_of_error_with_paid_calls_off_still_records_skipped_paid(
    store: SqliteStore, locks: LockManager, counter: MemoryCounter
) -> None:
    """A retryable status moves to skipped_paid: only absorbing answers are kept."""
    assert store.create_pending_token(TokenProfile(address="A", urls=[X_URL]), T0)
    seed_result(store, "A", X_URL, FetchStatus.ERROR, T0 - timedelta(days=1))
    eng = build_engine(store, locks, counting_registry(counter), enable_paid=False)

    out = record_one_url(eng, "A", X_URL, RunState())

    assert out.status is FetchStatus.SKIPPED_PAID and counter.total() == 0
