"""The state machine compares the run's start with times read from the store, which keeps them to the
millisecond (the Mongo store: BSON datetimes): a call in the run's first millisecond is the run's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from social_recording.domain.models import SocialUrl, UrlState, as_stored
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import (
    Act,
    Decision,
    Outcome,
    Result,
    Rules,
    RunIntent,
    Why,
    after,
    decide,
)

START = datetime(2026, 11, 30, 12, 0, 0, 250_400, tzinfo=UTC)
"""The named retry's selection, 0.4 ms into a millisecond."""
URL = "https://x.com/i/status/1"


def test_as_stored_floors_to_the_millisecond() -> None:
    assert as_stored(START) == datetime(2026, 11, 30, 12, 0, 0, 250_000, tzinfo=UTC)
    assert as_stored(as_stored(START)) == as_stored(START)


@pytest.mark.parametrize(("called_at", "act"), [
    (START + timedelta(microseconds=300), Act.LEAVE),  # this run's call, read back as 12:00:00.250
    (START + timedelta(milliseconds=2), Act.LEAVE),
    (START - timedelta(milliseconds=1), Act.CALL),  # before the run: re-examined
])
def test_a_named_retry_takes_a_call_in_its_first_millisecond_as_its_own(called_at: datetime, act: Act) -> None:
    stored = as_stored(called_at)  # what the Mongo store reads back
    state = UrlState(url=URL, platform="x", status=FetchStatus.BLOCKED, answer=FetchStatus.BLOCKED,
                     answered_at=stored, attempted_at=stored, attempts=2, version=2)
    element = SocialUrl(url=URL, status=FetchStatus.BLOCKED, attempted_at=stored, attempts=1, checked_at=stored)
    request = RunIntent(Why.RETRY_NAMED, since=START, named=frozenset({FetchStatus.BLOCKED}))
    decision = decide(state, element, request=request, selected=None, now=START + timedelta(seconds=1),
                      rules=Rules(max_attempts=5, min_interval=timedelta(0)))
    assert decision.act is act, decision


@pytest.mark.parametrize(("answered_at", "streak"), [
    (START + timedelta(seconds=1), 2),  # a later call answered and wrote first: its reset stands
    (START + timedelta(microseconds=300), 2),  # ... in this call's millisecond (both stores keep an answer's microseconds)
    (as_stored(START), 3),  # answered in this call's millisecond, before it went out: counted
    (START, 3),  # answered in this call's very instant (two holders in one instant): counted, the safe side
    (START - timedelta(milliseconds=1), 3),  # answered before this call went out: one more failure
])
def test_a_failed_call_counts_only_when_it_went_out_after_the_answer_the_state_holds(
    answered_at: datetime, streak: int
) -> None:
    state = UrlState(url=URL, platform="x", status=FetchStatus.OK, answer=FetchStatus.OK, answered_at=answered_at,
                     source_token="B", attempted_at=answered_at, attempts=4, streak=2, version=3)
    element = SocialUrl(url=URL, status=FetchStatus.ERROR, attempts=2, checked_at=START - timedelta(hours=1))
    transition = after(state, element, Outcome(Result.FAILED, called=True), decision=Decision(Act.CALL),
                       address="A", now=START, rules=Rules(max_attempts=5, min_interval=timedelta(0)))
    assert transition.state is not None and transition.state.streak == streak
    assert transition.state.attempted_at == max(answered_at, START), "the last call moves only forward"
