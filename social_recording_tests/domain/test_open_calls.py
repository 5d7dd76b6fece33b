"""A paid call recorded before it left (`OpenCall`): the rules that read it, as pure functions.

A holder finding another's open call never pays beside it; past the call's timeout the open call is
one failed call of the streak (made when it was opened), so a crash or a store that could not write
costs at most the budget; the holder that opened a call closes it with its result, whatever it is.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from social_recording.domain.models import OpenCall, SocialUrl, UrlState
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.url_machine import (
    OPEN_CALL_TIMEOUT,
    Act,
    Decision,
    Outcome,
    Result,
    Rules,
    RunIntent,
    Why,
    after,
    decide,
    settle,
    without_call,
)

T = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
URL = "https://x.com/i/status/7"
RULES = Rules(max_attempts=3, min_interval=timedelta(minutes=60))
CALL = OpenCall(provider="twitterapi", subject=URL, started_at=T, fence=4)
PENDING = SocialUrl(url=URL, status=FetchStatus.PENDING)
LIVE = RunIntent(Why.LIVE, since=T)


def _state(**fields: object) -> UrlState:
    return UrlState(**{"url": URL, "platform": "x", "status": FetchStatus.PENDING, "open_call": CALL, "fence": 4,
                       "version": 2, **fields})  # type: ignore[arg-type]


def test_the_default_timeout_outlasts_the_worst_call_and_the_url_lock() -> None:
    assert timedelta(seconds=105 + 180) <= OPEN_CALL_TIMEOUT


@pytest.mark.parametrize(("age", "counted"), [
    (timedelta(seconds=1), False),
    (OPEN_CALL_TIMEOUT - timedelta(microseconds=1), False),
    (OPEN_CALL_TIMEOUT, True),
    (timedelta(days=3), True),
])
def test_an_open_call_counts_as_one_failed_call_once_past_its_timeout(age: timedelta, counted: bool) -> None:
    state = _state(streak=1, attempts=1, attempted_at=T - timedelta(hours=2))
    settled = settle(state, T + age, RULES)
    assert settled is not None
    if not counted:
        assert settled is state
        return
    assert (settled.open_call, settled.streak, settled.attempts, settled.attempted_at) == (None, 2, 2, T)


def test_an_open_call_answered_by_a_later_call_costs_no_streak() -> None:
    state = _state(answer=FetchStatus.OK, answered_at=T + timedelta(seconds=5), attempted_at=T + timedelta(seconds=5),
                   attempts=1)
    settled = settle(state, T + OPEN_CALL_TIMEOUT, RULES)
    assert settled is not None and (settled.open_call, settled.streak, settled.attempts) == (None, 0, 2)
    assert settled.attempted_at == T + timedelta(seconds=5), "the last call moves only forward"


def test_a_holder_never_pays_beside_an_open_call() -> None:
    decision = decide(_state(), PENDING, request=LIVE, selected=None, now=T + timedelta(seconds=30), rules=RULES)
    assert (decision.act, decision.status, decision.cause) == (Act.ADOPT, FetchStatus.ERROR, Cause.BACKOFF)
    assert "open since" in decision.detail
    named = SocialUrl(url=URL, status=FetchStatus.NOT_FOUND)
    retry = RunIntent(Why.RETRY_NAMED, since=T, named=frozenset({FetchStatus.NOT_FOUND}))
    kept = decide(_state(), named, request=retry, selected=None, now=T + timedelta(seconds=30), rules=RULES)
    assert (kept.act, kept.status) == (Act.LEAVE, FetchStatus.NOT_FOUND)


def test_a_timed_out_open_call_is_counted_and_written_with_the_decision() -> None:
    """The third failure spends the budget: the holder adopts `exhausted` and writes the count."""
    state = _state(streak=2, attempts=2, attempted_at=T - timedelta(hours=2))
    decision = decide(state, PENDING, request=LIVE, selected=None, now=T + OPEN_CALL_TIMEOUT, rules=RULES)
    assert (decision.act, decision.status) == (Act.ADOPT, FetchStatus.EXHAUSTED)
    transition = without_call(decision, PENDING, T + OPEN_CALL_TIMEOUT)
    assert transition.state is not None
    assert (transition.state.streak, transition.state.open_call, transition.state.status) == (
        3, None, FetchStatus.EXHAUSTED)


def test_past_the_back_off_a_timed_out_open_call_leaves_the_url_due() -> None:
    state = _state(attempts=0)
    later = T + timedelta(hours=2)
    decision = decide(state, PENDING, request=RunIntent(Why.LIVE, since=later), selected=None, now=later,
                      rules=RULES)
    assert decision.act is Act.CALL and decision.settled is not None and decision.settled.streak == 1


@pytest.mark.parametrize("result", [Result.ANSWER, Result.FAILED])
def test_the_holder_that_opened_a_call_closes_it_with_its_result(result: Result) -> None:
    mine = OpenCall(provider="twitterapi", subject=URL, started_at=T, fence=5)
    state = UrlState(url=URL, platform="x", status=FetchStatus.PENDING, open_call=mine, fence=5, version=3)
    outcome = Outcome(result, status=FetchStatus.OK if result is Result.ANSWER else None, called=True, opened=mine)
    transition = after(state, PENDING, outcome, decision=Decision(Act.CALL), address="A", now=T, rules=RULES)
    assert transition.state is not None and transition.state.open_call is None
    others = after(_state(), PENDING, outcome, decision=Decision(Act.CALL), address="A", now=T, rules=RULES)
    assert others.state is not None and others.state.open_call == CALL, "another holder's record stays"


def test_a_record_closed_alone_is_written_with_the_status_as_it_stands() -> None:
    """A holder recorded its paid call and the request never left (the connection failed): nothing
    else changes, but the write closing its record stores the URL's status as it stands at that write
    (docs/architecture.md: every write of the URL state does), here pending since the streak of the
    last failure expired with the window, not the `error` stored back then."""
    mine = OpenCall(provider="twitterapi", subject=URL, started_at=T, fence=5)
    state = UrlState(url=URL, platform="x", status=FetchStatus.ERROR, streak=1, attempts=1,
                     attempted_at=T - timedelta(days=15), open_call=mine, fence=5, version=3)
    outcome = Outcome(Result.NOT_CALLED, status=FetchStatus.ERROR, opened=mine)
    transition = after(state, PENDING, outcome, decision=Decision(Act.CALL), address="A", now=T, rules=RULES)
    assert transition.state is not None and transition.state.open_call is None
    assert transition.state.status is FetchStatus.PENDING


# ---------------------------------------------------------------- a record written over a timed-out one

def _over(dead: OpenCall, at: datetime, fence: int) -> OpenCall:
    """The record the next holder writes over a dead holder's timed-out call (the call guard's)."""
    return OpenCall(provider="twitterapi", subject=URL, started_at=at, fence=fence, replaced=dead)


def test_a_record_written_over_a_timed_out_call_counts_both_once_its_own_holder_dies_too() -> None:
    """A holder counted a dead holder's timed-out call, wrote its own record over it, paid and died
    before its result was written: the next holder counts both calls (the count travelled with the
    record), each once, the older first."""
    second = _over(CALL, T + timedelta(hours=1), 6)
    state = _state(open_call=second, attempted_at=T - timedelta(hours=2), streak=1, attempts=1)
    settled = settle(state, T + timedelta(hours=1) + OPEN_CALL_TIMEOUT, RULES)
    assert settled is not None
    assert (settled.open_call, settled.streak, settled.attempts, settled.attempted_at) == (
        None, 3, 3, T + timedelta(hours=1))
    assert settled.status is FetchStatus.EXHAUSTED


def test_a_replaced_call_older_than_the_window_counts_in_a_streak_of_its_own() -> None:
    """Counted one after the other, as if each had been counted in its time: the window between them
    expires the older one's streak."""
    later = T + timedelta(days=15)
    state = _state(open_call=_over(CALL, later, 6), attempted_at=T - timedelta(hours=2), streak=2, attempts=2)
    settled = settle(state, later + OPEN_CALL_TIMEOUT, RULES)
    assert settled is not None and (settled.streak, settled.attempts, settled.attempted_at) == (1, 4, later)


@pytest.mark.parametrize("result", [Result.ANSWER, Result.FAILED])
def test_the_holder_that_wrote_over_a_timed_out_call_counts_it_with_its_result(result: Result) -> None:
    mine = _over(CALL, T + timedelta(hours=1), 6)
    state = _state(open_call=mine, fence=6, attempted_at=T - timedelta(hours=2), streak=1, attempts=1)
    now = T + timedelta(hours=1, seconds=3)
    outcome = Outcome(result, status=FetchStatus.OK if result is Result.ANSWER else None, called=True, opened=mine)
    t = after(state, PENDING, outcome, decision=Decision(Act.CALL), address="A", now=now, rules=RULES)
    assert t.state is not None and t.state.open_call is None and t.state.attempts == 3, "the dead one's and this one"
    assert t.state.streak == (0 if result is Result.ANSWER else 3)


def test_a_saved_submission_leaves_the_timed_out_call_in_its_place_and_it_counts_once() -> None:
    """A two-step submission replaces its holder's own record (the next holder resumes, not pays) and
    puts back the timed-out call that record was written over: counted by this holder's result, or
    by the next holder if this one dies."""
    from social_recording.domain.models import PaidRequest

    mine = _over(CALL, T + timedelta(hours=1), 6)
    request = PaidRequest(provider="urlscan", request_id="r1", submitted_at=T + timedelta(hours=1))
    saved = _state(open_call=mine.replaced, fence=6, request=request, attempted_at=T - timedelta(hours=2),
                   streak=1, attempts=1)
    now = T + timedelta(hours=1, seconds=3)
    outcome = Outcome(Result.FAILED, called=True, opened=mine, submitted=request)
    t = after(saved, PENDING, outcome, decision=Decision(Act.CALL), address="A", now=now, rules=RULES)
    assert t.state is not None and (t.state.open_call, t.state.streak, t.state.attempts) == (None, 3, 3)
    nxt = settle(saved, now + timedelta(minutes=1), RULES)  # this holder died: the next one counts it
    assert nxt is not None and (nxt.open_call, nxt.streak, nxt.attempts, nxt.request) == (None, 2, 2, request)
