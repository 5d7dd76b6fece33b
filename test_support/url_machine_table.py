"""The per-URL state machine's tables as the model test reads them: one line per row of the tables
in docs/architecture.md ("The per-URL state machine": `decide` and `after`; "No payment without a
record": the open call; "Back-off: one due time"; "Fencing": which writes the store refuses), each
citing its row. Not a second engine: no
merging, no stores, no locks; the model compares what the engine decided, computed and stored with
what these rows say, at every step, so a rule whose breach costs no extra call at once still fails.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from social_recording.domain.models import OpenCall, PaidRequest, SocialUrl, UrlState
from social_recording.domain.policy import Backoff
from social_recording.domain.status import ABSORBING, FetchStatus
from social_recording.domain.url_machine import (
    Act,
    NextState,
    Outcome,
    Result,
    Rules,
    RunIntent,
    Selected,
    Why,
)
from social_recording.store.base import WriteResult

OK, ERROR, EXHAUSTED, PENDING, UNSUPPORTED = (FetchStatus.OK, FetchStatus.ERROR, FetchStatus.EXHAUSTED,
                                              FetchStatus.PENDING, FetchStatus.UNSUPPORTED)
RANKING = (OK, FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID)
"""The answers, best first, as docs/architecture.md ranks them (the model's own: not the engine's)."""


def rank(status: FetchStatus) -> int:
    """Higher is better; a status that is no answer ranks below every answer."""
    return len(RANKING) - RANKING.index(status) if status in RANKING else 0


EMPTY = UrlState(url="", platform="", status=PENDING)
"""A URL nothing has been recorded for."""


def fresh(s: UrlState, now: datetime, rules: Rules) -> FetchStatus | None:
    """"fresh" is within 14 days of the anchor (none: never expires); Telegram never has a fresh answer;
    an `ok` needs a source token whose links stand for it."""
    if not rules.reusable or s.answer is None or (s.answer is OK and not s.source_token):
        return None
    return s.answer if s.answered_at is None or now - s.answered_at < rules.ttl else None


def live(s: UrlState | NextState, now: datetime, rules: Rules) -> int:
    """"live streak": the streak, or 0 once the last call is 14 days old."""
    return 0 if s.attempted_at is not None and now - s.attempted_at >= rules.ttl else s.streak


def wait(streak: int, rules: Rules) -> timedelta:
    """Back-off table: 0 or 1 -> base; n > 1 -> min(cap, base x growth^(n-1))."""
    b = rules.backoff
    return b.base if streak <= 1 else min(b.cap, b.base * b.growth ** (streak - 1))


def counted(s: UrlState, now: datetime, rules: Rules) -> UrlState:
    """"No payment without a record": an open call older than the call timeout is one failed call of
    the streak, made when it was opened (not if an answer came after it), counted after the timed-out
    calls it was written over; a younger one stays."""
    call = s.open_call
    if call is None or now - call.started_at < rules.call_timeout:  # row "younger": it stays
        return s
    s = s.model_copy(update={"open_call": call.replaced})  # row "written over a timed-out one": that one first
    if call.replaced is not None:
        s = counted(s, now, rules)
    failed = 0 if s.answered_at is not None and s.answered_at > call.started_at else 1  # row "older"
    last = call.started_at if s.attempted_at is None else max(s.attempted_at, call.started_at)
    return s.model_copy(update={"open_call": None, "streak": live(s, call.started_at, rules) + failed,
                                "attempts": s.attempts + 1, "attempted_at": last})


def url_status(s: UrlState | NextState, now: datetime, rules: Rules) -> FetchStatus:
    """What the URL stands at: its window's answer; `exhausted` once a streak (live) or the engine
    failures reach the budget; `error` with a live streak; else pending."""
    if s.answer is not None and (s.answered_at is None or now - s.answered_at < rules.ttl):
        return s.answer
    if live(s, now, rules) >= rules.max_attempts or s.engine_failures >= rules.max_attempts:
        return EXHAUSTED
    return ERROR if live(s, now, rules) else PENDING


def due_by(now: datetime, run_interval: timedelta, backoff: Backoff) -> datetime:
    """Back-off table, "a run's interval": a run takes what is due by its moment moved by how much its
    interval differs from the base (an interval of 0 takes what is due within one base interval)."""
    return now + (backoff.base - run_interval)


def element_due(recorded: datetime, s: UrlState | None, rules: Rules) -> datetime:
    """Back-off table, "the element is next due": recorded + the wait for the streak it leaves
    (an expired streak: base)."""
    return recorded + wait(0 if s is None else live(s, recorded, rules), rules)


@dataclass(frozen=True)
class Expected:
    act: Act
    status: FetchStatus | None = None
    row: str = ""


def _to_the_ms(value: datetime) -> datetime:
    """A run's start at the resolution every store keeps, the millisecond (docs/architecture.md): a call
    stored in its millisecond counts as since it. The table's own, not the engine's helper."""
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def decision(state: UrlState | None, element: SocialUrl, *, request: RunIntent, selected: Selected | None,
             now: datetime, rules: Rules, read_nothing: bool = False) -> Expected:
    """The `decide` table, first matching row wins, then the open call's row for a decision to call."""
    s = counted(state or EMPTY, now, rules)
    e = element.status
    answer = fresh(s, now, rules)
    called = s.attempted_at is not None and s.attempted_at >= _to_the_ms(request.since)
    named = request.why is Why.RETRY_NAMED and e in request.named and e in ABSORBING
    due_by = now + (rules.backoff.base - rules.min_interval)
    in_backoff = s.attempted_at is not None and s.attempted_at + wait(live(s, now, rules), rules) > due_by
    rows: tuple[tuple[bool, Expected], ...] = (
        (e is OK, Expected(Act.LEAVE, e, "ok | any | any | leave")),
        (selected is not None and (e, element.checked_at) != (selected.status, selected.checked_at),
         Expected(Act.LEAVE, e, "changed since the run selected it | leave")),
        (named and not called and (answer is None or rank(answer) <= rank(e)),
         Expected(Act.RESUME if s.request is not None else Act.CALL, None, "named absorbing status | call, forced")),
        (answer is not None and (e not in ABSORBING or rank(answer) > rank(e)),
         Expected(Act.LEAVE if answer is e else Act.REUSE, answer, "a fresh answer | reuse it")),
        (e in ABSORBING, Expected(Act.LEAVE, e, "absorbing | leave")),
        (live(s, now, rules) >= rules.max_attempts, Expected(Act.ADOPT, EXHAUSTED, "live streak >= budget | exhausted")),
        (s.engine_failures >= rules.max_attempts,
         Expected(Act.ADOPT, EXHAUSTED, "engine failures >= budget | exhausted (engine_failure)")),
        (read_nothing, Expected(Act.ADOPT, UNSUPPORTED, "the run's own call read nothing | unsupported")),
        (live(s, now, rules) > 0 and (called or in_backoff),
         Expected(Act.ADOPT, ERROR, "live streak > 0, called since the start or within the back-off | error")),
        (s.request is not None, Expected(Act.RESUME, None, "an open paid request | resume it")),
        (True, Expected(Act.CALL, None, "otherwise | call")),
    )
    chosen = next(expected for matches, expected in rows if matches)
    if chosen.act in (Act.ADOPT,) and chosen.status is e and e in ABSORBING:
        chosen = Expected(Act.LEAVE, e, chosen.row + " (already so: unchanged)")
    if chosen.act in (Act.CALL, Act.RESUME) and s.open_call is not None:  # open call row "younger"
        if e in ABSORBING:
            return Expected(Act.LEAVE, e, "open call younger than the timeout | a named absorbing element keeps")
        return Expected(Act.ADOPT, ERROR, "open call younger than the timeout | pays nothing beside it: error")
    return chosen


@dataclass(frozen=True)
class NextUrl:
    """The URL state fields the `after` table names."""

    streak: int
    attempts: int
    attempted_at: datetime | None
    engine_failures: int
    answer: FetchStatus | None
    answered_at: datetime | None
    source_token: str | None
    request: str | None
    """The open paid request's id."""
    open_call: OpenCall | None


def _request(s: UrlState, outcome: Outcome) -> PaidRequest | None:
    """"an open paid request survives failed attempts": only an answer or its retention closes it."""
    return outcome.submitted or (None if outcome.request_expired else s.request)


def _last(s: UrlState, now: datetime) -> datetime:
    """"the last call moves only forward"."""
    return now if s.attempted_at is None or s.attempted_at < now else s.attempted_at


def after(state: UrlState | None, element: SocialUrl, outcome: Outcome, *, address: str, now: datetime,
          rules: Rules) -> tuple[FetchStatus | None, NextUrl | None, str]:
    """The `after` table: (the element's status, the URL state's next fields, the row), for an
    element written (None: deferred, nothing written)."""
    s = state or EMPTY
    if outcome.opened is not None and s.open_call == outcome.opened:
        # "the call's own result closes the record": the timed-out call it was written over counts once
        s = s.model_copy(update={"open_call": outcome.opened.replaced})
    s = counted(s, now, rules)
    e, result, called = element.status, outcome.result, outcome.called
    window = fresh(s, now, rules)
    kept = window if window is not None and window is not e else e  # a named absorbing element keeps
    base = NextUrl(s.streak, s.attempts, s.attempted_at, s.engine_failures, s.answer, s.answered_at, s.source_token,
                   None if s.request is None else s.request.request_id, s.open_call)
    request = _request(s, outcome)
    rid = None if request is None else request.request_id
    if result is Result.DEFERRED:  # "the rate limiter could not be asked before any request | unchanged | unchanged"
        return None, None, "deferred"
    if result is Result.ANSWER:
        assert outcome.status is not None
        better = (s.answer is not None and rank(s.answer) > rank(outcome.status)
                  and (s.answered_at is None or now - s.answered_at < rules.ttl))
        anchor = now if called else (s.answered_at if better else None)
        answer, source = ((s.answer, s.source_token) if better
                          else (outcome.status, address if outcome.status is OK else None))
        nxt = NextUrl(0, s.attempts + int(called), _last(s, now) if called else s.attempted_at, 0, answer, anchor,
                      source, None, s.open_call)
        status = answer if better and rules.reusable else outcome.status
        return status, _closed(nxt, outcome), "an answer | streak 0, engine failures 0, request closed"
    if result is Result.FAILED:
        streak = live(s, now, rules) + (0 if s.answered_at is not None and s.answered_at > now else 1)
        nxt = NextUrl(streak, s.attempts + 1, _last(s, now), 0, s.answer, s.answered_at, s.source_token, rid,
                      s.open_call)
        after_window = fresh(s, now, rules)
        status = after_window or (EXHAUSTED if streak >= rules.max_attempts else ERROR)
        return status, _closed(nxt, outcome), "a failed call | live streak + 1, answer and request kept"
    if result is Result.UNREADABLE:
        nxt = (NextUrl(live(s, now, rules), s.attempts + 1, _last(s, now), s.engine_failures, s.answer, s.answered_at,
                       s.source_token, rid, s.open_call) if called else base)
        return (e if e in ABSORBING else UNSUPPORTED), _closed(nxt, outcome), "a shape the generator cannot read"
    if result is Result.NOT_CALLED:
        assert outcome.status is not None
        nxt = replace(base, request=rid)
        return (kept if e in ABSORBING else outcome.status), _closed(nxt, outcome), "no call possible | unchanged"
    failures = s.engine_failures + 1  # "our code failed before any request | engine failures + 1"
    nxt = NextUrl(s.streak, s.attempts, s.attempted_at, failures, s.answer, s.answered_at, s.source_token, rid,
                  s.open_call)
    status = kept if e in ABSORBING else (EXHAUSTED if failures >= rules.max_attempts else ERROR)
    return status, _closed(nxt, outcome), "our code failed before any request | engine failures + 1"


def _closed(nxt: NextUrl, outcome: Outcome) -> NextUrl:
    """"The call's own result closes the record, whatever it is" (another holder's stays)."""
    return replace(nxt, open_call=None) if outcome.opened is not None and nxt.open_call == outcome.opened else nxt


def stored(s: UrlState | NextState) -> NextUrl:
    """A URL state's fields (stored, or the next ones the engine computed), as the table names them."""
    return NextUrl(s.streak, s.attempts, s.attempted_at, s.engine_failures, s.answer, s.answered_at, s.source_token,
                   None if s.request is None else s.request.request_id, s.open_call)


def refusal(element: SocialUrl | None, state: UrlState | None, fence: int, expect_version: int | None) -> WriteResult:
    """"Fencing": a URL write with `fence`, decided on the state's `expect_version` (None: any), is refused
    by the first check that fails (what the store held right before it), else applied."""
    state_fence, version = (0, 0) if state is None else (state.fence, state.version)
    rows: tuple[tuple[bool, WriteResult], ...] = (
        (element is None, WriteResult.NO_ELEMENT),  # no such element
        (element is not None and element.fence > fence, WriteResult.FENCED),  # 1. a newer holder wrote the element
        (element is not None and element.status is OK, WriteResult.OK_KEPT),  # 2. ok is never replaced
        (state_fence > fence, WriteResult.FENCED),  # 3. a newer holder wrote the URL state
        (expect_version is not None and version != expect_version, WriteResult.STALE),  # 4. decided on an old version
    )
    return next((result for hit, result in rows if hit), WriteResult.APPLIED)


def state_refusal(state: UrlState | None, fence: int) -> WriteResult:
    """"Fencing": the URL state's own writes (an open call, a paid request) are refused by check 3 alone."""
    return WriteResult.FENCED if state is not None and state.fence > fence else WriteResult.APPLIED
