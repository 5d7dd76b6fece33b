"""The per-URL state machine: every rule about one canonical URL, as two pure functions.

`decide` says what one recording of one (token, URL) does under the URL lock; `after` turns what the
call brought back into the element's and the URL state's next values. The recorder only carries the
decision out and hands the store the result as one write conditional on the state it read. The rules
and their table: docs/architecture.md, "The per-URL state machine".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.dedupe import decide as dedupe_decide
from social_recording.domain.models import OpenCall, PaidRequest, SocialUrl, UrlState, as_stored
from social_recording.domain.policy import DEFAULT_BACKOFF, Backoff, due_by, resolve_final_status
from social_recording.domain.status import ABSORBING, REUSABLE, Cause, FetchStatus

ANSWERS: tuple[FetchStatus, ...] = (FetchStatus.OK, FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID)
"""The provider's answers about a target, best first: within the window a better one is never replaced."""
assert frozenset(ANSWERS) == REUSABLE


def rank(status: FetchStatus) -> int:
    """Higher is better; every status that is not an answer ranks below every answer."""
    return len(ANSWERS) - ANSWERS.index(status) if status in ANSWERS else 0


class Why(StrEnum):
    """Why a run records a URL: a property of the run's request, never read off an element."""

    LIVE = "live"
    RECONCILE = "reconcile"
    RETRY = "retry"
    """The default retry selection: only what can change under this configuration."""
    RETRY_NAMED = "retry_named"
    """A retry whose `statuses` were named: elements selected with a named absorbing status are
    re-examined once (gate and budget skipped), unless the URL was called after the selection."""


@dataclass(frozen=True)
class RunIntent:
    """What the run was asked to do, fixed when it starts."""

    why: Why
    since: datetime
    """When the run selected its work (retry) or started (live, reconcile): a URL called at or after
    it (to the millisecond the stores keep, `as_stored`) was called by this run or alongside it, and
    its answer is adopted instead of bought again."""
    named: frozenset[FetchStatus] = frozenset()

    def __post_init__(self) -> None:
        if self.named and self.why is not Why.RETRY_NAMED:
            raise ValueError(f"only a named retry names statuses, got {self.why.value} with {sorted(self.named)}")
        if FetchStatus.OK in self.named:
            raise ValueError("ok is never named: an ok element is never re-opened")


@dataclass(frozen=True)
class Selected:
    """An element as the run's selection saw it (retry runs): if it changed before the URL lock was
    taken, another run recorded it and that result stands."""

    status: FetchStatus
    checked_at: datetime | None


OPEN_CALL_TIMEOUT = timedelta(minutes=5)
"""How long a paid call recorded before it left may stay without a result before another holder counts
it as failed: longer than the worst paid call (about 105 s) plus the URL lock's lifetime (180 s), so by
then the holder that opened it has written its result or lost its lease."""


@dataclass(frozen=True)
class Rules:
    """The numbers the machine judges by (one run's settings and the URL's platform)."""

    max_attempts: int
    min_interval: timedelta
    reusable: bool = True
    """False for platforms whose answers are never handed to another holder (the platform's
    descriptor says so: a key such as a username can change hands, so an old answer may describe
    another target)."""
    ttl: timedelta = DEDUPE_TTL
    call_timeout: timedelta = OPEN_CALL_TIMEOUT
    backoff: Backoff = DEFAULT_BACKOFF
    """The policy's back-off (its growth with the streak); `min_interval` is this run's interval,
    which moves every due time by its difference to the policy's base (`policy.due_by`)."""

    def __post_init__(self) -> None:
        if self.call_timeout <= timedelta(0):
            raise ValueError(f"call_timeout must be > 0, got {self.call_timeout!r}")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts!r}")
        if self.min_interval < timedelta(0):
            raise ValueError(f"min_interval must be >= 0, got {self.min_interval!r}")


class Act(StrEnum):
    LEAVE = "leave"
    """Write nothing: the element is final, or another run recorded it after the selection."""
    REUSE = "reuse"
    """Record the window's answer without a call (ok copies the source token's links)."""
    ADOPT = "adopt"
    """Record the URL's fresh failure without a call: its streak is spent, or it failed moments ago."""
    RESUME = "resume"
    """Call, picking up the URL's open paid request instead of submitting (paying) again."""
    CALL = "call"


@dataclass(frozen=True)
class Decision:
    act: Act
    status: FetchStatus | None = None
    """REUSE / ADOPT: the status to record (LEAVE: the element's, unchanged)."""
    source_token: str | None = None
    """REUSE of ok: whose links stand for the answer."""
    cause: Cause | None = None
    detail: str = ""
    forced: bool = False
    """CALL / RESUME of a named retry re-examining an answer (the gate and the budget were skipped)."""
    settled: UrlState | None = None
    """The URL state with an open call past its timeout counted as a failed call, when the decision
    found one: written with the element, so the count is kept."""

    @property
    def calls(self) -> bool:
        return self.act in (Act.CALL, Act.RESUME)


EMPTY = UrlState(url="", platform="", status=FetchStatus.PENDING)
"""The state of a URL nothing has been recorded for."""


def fresh_answer(state: UrlState | None, now: datetime, rules: Rules) -> tuple[FetchStatus, str | None] | None:
    """The window's answer another holder may take without a call: (status, source token), or None."""
    if not rules.reusable:
        return None
    hit = dedupe_decide(state, now, rules.ttl)
    return None if hit is None else (hit.status, hit.source_token)


def live_streak(state: UrlState | NextState, now: datetime, rules: Rules) -> int:
    """The failure streak that still counts: a streak whose last call is older than the reuse window
    has expired with it, as an answer would have (a provider outage months ago says nothing about the
    URL now). An element already `exhausted` stays so; only new holders and the URL state start afresh."""
    if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:
        return 0
    return state.streak


def settle(state: UrlState | None, now: datetime, rules: Rules) -> UrlState | None:
    """The state once an open call past its timeout is counted: one failed call of the streak (unless
    an answer came after it went out), made when it was opened, after the timed-out calls it was
    written over (`OpenCall.replaced`, older still), each counted once the same way. A holder that
    crashed, or could not write its result, thereby costs at most the budget, never one payment per run."""
    if state is None or state.open_call is None or now - state.open_call.started_at < rules.call_timeout:
        return state
    call = state.open_call
    before = state.model_copy(update={"open_call": call.replaced})
    if call.replaced is not None:
        before = settle(before, now, rules) or before
    opened = call.started_at
    answered_after = before.answered_at is not None and before.answered_at > opened
    last = opened if before.attempted_at is None or before.attempted_at < opened else before.attempted_at
    streak = live_streak(before, opened, rules) + (0 if answered_after else 1)
    counted = before.model_copy(update={"open_call": None, "streak": streak, "attempts": before.attempts + 1,
                                        "attempted_at": last})
    return counted.model_copy(update={"status": url_status(counted, now, rules)})


def _open_call_detail(call: OpenCall, rules: Rules) -> str:
    return (f"a paid {call.provider} call of this URL is open since {call.started_at.isoformat()} (its holder may "
            f"still answer); counted as failed if it has no result by {(call.started_at + rules.call_timeout).isoformat()}")


def _called_since(state: UrlState | None, since: datetime) -> bool:
    return state is not None and state.attempted_at is not None and state.attempted_at >= as_stored(since)


def decide(
    state: UrlState | None,
    element: SocialUrl,
    *,
    request: RunIntent,
    selected: Selected | None,
    now: datetime,
    rules: Rules,
    read_nothing: bool = False,
) -> Decision:
    """What one recording of `element` does, given its URL's `state` (None: nothing recorded yet).
    `read_nothing`: this run's own call of the URL brought back a shape the generator cannot read
    (the run remembers it; the URL state keeps no unreadable answer to adopt)."""
    settled = settle(state, now, rules)
    decision = _decide(settled, element, request=request, selected=selected, now=now, rules=rules,
                       read_nothing=read_nothing)
    if settled is not state and decision.act is not Act.LEAVE:
        decision = replace(decision, settled=settled)
    if decision.calls and settled is not None and settled.open_call is not None:
        # Someone's paid call may still be on its way: never a second payment beside it.
        detail = _open_call_detail(settled.open_call, rules)
        if element.status in ABSORBING:
            return Decision(Act.LEAVE, element.status, detail=f"{detail}; kept {element.status.value}")
        return replace(_adopt(element, FetchStatus.ERROR, Cause.BACKOFF, detail), settled=decision.settled)
    return decision


def _decide(
    state: UrlState | None,
    element: SocialUrl,
    *,
    request: RunIntent,
    selected: Selected | None,
    now: datetime,
    rules: Rules,
    read_nothing: bool,
) -> Decision:
    status = element.status
    if status is FetchStatus.OK:
        return Decision(Act.LEAVE, status, detail="already ok")
    if selected is not None and (status, element.checked_at) != (selected.status, selected.checked_at):
        return Decision(Act.LEAVE, status,
                        detail=f"recorded {status.value} by another run after this one selected it; that result stands")
    fresh = fresh_answer(state, now, rules)
    called = _called_since(state, request.since)
    forced = request.why is Why.RETRY_NAMED and status in request.named and status in ABSORBING
    if forced and not called and (fresh is None or rank(fresh[0]) <= rank(status)):
        act = Act.RESUME if state is not None and state.request is not None else Act.CALL
        return Decision(act, forced=True, detail=f"{status.value} named by the retry: re-examined")
    if fresh is not None and (status not in ABSORBING or rank(fresh[0]) > rank(status)):
        answer, source = fresh
        if answer is status:
            return Decision(Act.LEAVE, status, detail=f"already {status.value}")
        detail = f"reused {answer.value}" + (f" of {source}" if source else "")
        return Decision(Act.REUSE, answer, source_token=source, detail=detail)
    if status in ABSORBING:
        return Decision(Act.LEAVE, status, detail=f"already {status.value}")
    s = state or EMPTY
    streak = live_streak(s, now, rules)
    if streak >= rules.max_attempts:
        return _adopt(element, FetchStatus.EXHAUSTED, None,
                      f"this URL failed its last {streak} calls (the budget is {rules.max_attempts})")
    if s.engine_failures >= rules.max_attempts:
        return _adopt(element, FetchStatus.EXHAUSTED, Cause.ENGINE_FAILURE,
                      f"our own code failed {s.engine_failures} times on this URL before any request")
    if read_nothing:
        return _adopt(element, FetchStatus.UNSUPPORTED, Cause.UNPARSEABLE,
                      "this run's call of this URL read nothing (a shape the generator cannot read); "
                      "not bought again in this run")
    if streak > 0 and (called or not may_call_again(s, now, rules)):
        when = s.attempted_at.isoformat() if s.attempted_at else "?"
        who = "this run's call" if called else "another holder's call"
        return _adopt(element, FetchStatus.ERROR, Cause.BACKOFF,
                      f"error from {who} at {when}; called again after the back-off")
    if s.request is not None:
        return Decision(Act.RESUME, detail=f"resumes {s.request.provider} request {s.request.request_id}")
    return Decision(Act.CALL)


def next_call_at(state: UrlState, now: datetime, rules: Rules) -> datetime | None:
    """When a URL may be called again: its last call plus the policy's wait for the streak that still
    counts (never called: None, at once)."""
    if state.attempted_at is None:
        return None
    return rules.backoff.next_due(state.attempted_at, live_streak(state, now, rules))


def may_call_again(state: UrlState, now: datetime, rules: Rules) -> bool:
    """The back-off between two calls of one URL (`next_call_at`), asked "due by" the run's moment."""
    due = next_call_at(state, now, rules)
    return due is None or due <= due_by(now, rules.min_interval, rules.backoff)


def element_due_at(transition: Transition, state: UrlState | None, now: datetime, rules: Rules) -> datetime:
    """When the element a transition writes is next due: the policy's wait for the failure streak the
    URL holds after the write, from this recording. A recording is never earlier than the URL's last
    call, so a selected element finds its URL past the back-off too."""
    after: UrlState | NextState | None = transition.state if transition.state is not None else state
    streak = 0 if after is None else live_streak(after, now, rules)
    return rules.backoff.next_due(now, streak)


def _adopt(element: SocialUrl, status: FetchStatus, cause: Cause | None, detail: str) -> Decision:
    if element.status is status and status in ABSORBING:
        return Decision(Act.LEAVE, status, detail=f"{detail}; unchanged")
    return Decision(Act.ADOPT, status, cause=cause, detail=detail)


class Result(StrEnum):
    """What a call (or the attempt to make one) brought back."""

    ANSWER = "answer"
    """The provider answered about the target (ok, not_found, blocked) or the graph broke (invalid)."""
    FAILED = "failed"
    """A request left and the call failed transiently (5xx, 429, timeout, credit gone, a defect of
    ours after the request): one more failure in the URL's streak."""
    NOT_CALLED = "not_called"
    """Nothing was sent for a reason of our own (no generator, paid calls off, credit or quota gone
    earlier in the run, the provider's rate would hold the request too long)."""
    UNREADABLE = "unreadable"
    """The URL's shape names nothing the generator can read: `unsupported` until the code changes."""
    ENGINE = "engine"
    """Our own code failed before any request: counted apart from calls."""
    DEFERRED = "deferred"
    """Nothing sent and nothing learned (a backend could not be asked): the element is left as is."""


@dataclass(frozen=True)
class Outcome:
    result: Result
    status: FetchStatus | None = None
    """ANSWER: the answer; NOT_CALLED: the status to record."""
    called: bool = False
    """A request really left (from the HTTP layer, never guessed)."""
    cause: Cause | None = None
    detail: str = ""
    submitted: PaidRequest | None = None
    """A paid request this attempt submitted (already saved on the URL state)."""
    request_expired: bool = False
    """The URL's open request was past its provider's retention: it is closed."""
    opened: OpenCall | None = None
    """The paid call this attempt recorded before sending: its result, whatever it is, closes it (the
    timed-out call it was written over, `OpenCall.replaced`, is counted then)."""

    def __post_init__(self) -> None:
        if self.result is Result.ANSWER and self.status not in REUSABLE:
            raise ValueError(f"an answer is one of {sorted(s.value for s in REUSABLE)}, got {self.status!r}")
        if self.result is Result.NOT_CALLED and (self.status is None or self.called):
            raise ValueError("a not-called outcome names the status to record and sends nothing")
        if self.result in (Result.FAILED,) and not self.called:
            raise ValueError("a failed call has a request behind it; before any request it is NOT_CALLED/ENGINE")


@dataclass(frozen=True)
class NextState:
    """The URL state's next absolute values (the store adds url, platform, fence and version)."""

    status: FetchStatus
    answer: FetchStatus | None
    answered_at: datetime | None
    source_token: str | None
    streak: int
    attempted_at: datetime | None
    attempts: int
    engine_failures: int
    request: PaidRequest | None
    open_call: OpenCall | None = None


@dataclass(frozen=True)
class NextElement:
    status: FetchStatus
    attempts: int
    attempted_at: datetime | None
    cause: Cause | None
    detail: str
    copy_links_from: str | None = None
    """Reuse: the token whose links stand for the answer; None with `own_links` means the call's graph."""
    own_links: bool = False
    """The element gets the links of this call's graph (an `ok` this call produced)."""


@dataclass(frozen=True)
class Transition:
    element: NextElement | None
    """None: the element is not written."""
    state: NextState | None
    """None: the URL state is not written."""


def url_status(state: UrlState | NextState, now: datetime, rules: Rules) -> FetchStatus:
    """What the URL stands at for a new holder now: its window's answer, a spent streak, a failure, or
    nothing yet (pending). Stored beside the state for operators; the rules read the fields."""
    answer, anchor = state.answer, state.answered_at
    if answer is not None and (anchor is None or now - anchor < rules.ttl):
        return answer
    streak = live_streak(state, now, rules)
    if streak >= rules.max_attempts or state.engine_failures >= rules.max_attempts:
        return FetchStatus.EXHAUSTED
    return FetchStatus.ERROR if streak else FetchStatus.PENDING


def _as_next(s: UrlState) -> NextState:
    return NextState(status=s.status, answer=s.answer, answered_at=s.answered_at, source_token=s.source_token,
                     streak=s.streak, attempted_at=s.attempted_at, attempts=s.attempts,
                     engine_failures=s.engine_failures, request=s.request, open_call=s.open_call)


def without_call(decision: Decision, element: SocialUrl, now: datetime) -> Transition:
    """The write of a REUSE or ADOPT decision: the element, and the URL state when the decision
    counted an open call past its timeout."""
    if decision.act not in (Act.REUSE, Act.ADOPT) or decision.status is None:
        raise ValueError(f"only REUSE and ADOPT are written without a call, got {decision.act.value}")
    return Transition(
        NextElement(decision.status, element.attempts, element.attempted_at, decision.cause, decision.detail,
                    copy_links_from=decision.source_token),
        None if decision.settled is None else _as_next(decision.settled),
    )


def after(
    state: UrlState | None,
    element: SocialUrl,
    outcome: Outcome,
    *,
    decision: Decision,
    address: str,
    now: datetime,
    rules: Rules,
) -> Transition:
    """The next element and URL state once a CALL / RESUME decision was carried out.

    Pure and re-runnable: when the store finds the URL state changed since it was read (another
    holder wrote in between), the recorder reads it again and calls `after` once more, so the
    answers merge instead of the last writer winning."""
    if not decision.calls:
        raise ValueError(f"`after` follows a call decision, got {decision.act.value}")
    own_call = outcome.opened
    stored = state
    if own_call is not None and state is not None and state.open_call == own_call:
        # This attempt knows the result of the call it opened: its record is closed, and the timed-out
        # call it was written over (if any) is counted now (docs/architecture.md, "No payment without a
        # record"). A saved two-step submission already put that one back in its place.
        state = state.model_copy(update={"open_call": own_call.replaced})
    settled = settle(state, now, rules)
    transition = _after(settled, element, outcome, address=address, now=now, rules=rules)
    if transition.element is None:
        return transition
    next_state = transition.state
    if next_state is None and settled is not None and settled is not stored:
        # A count, or this attempt's own record closed, to write even when nothing else is: as every write of
        # the URL state, with its status as it stands now.
        next_state = _with_status(_as_next(settled), now, rules)
    return Transition(transition.element, next_state)


def _after(
    state: UrlState | None, element: SocialUrl, outcome: Outcome, *, address: str, now: datetime, rules: Rules
) -> Transition:
    """One row of the `after` table per kind of result (docs/architecture.md, "The per-URL state machine")."""
    before = _as_next(state if state is not None else EMPTY)
    result = outcome.result
    if result is Result.DEFERRED:
        return Transition(None, None)
    if result is Result.ANSWER:
        return _answered(before, element, outcome, address, now, rules)
    if result is Result.FAILED:
        return _call_failed(before, element, outcome, now, rules)
    if result is Result.UNREADABLE:
        return _unreadable(before, element, outcome, now, rules)
    if result is Result.NOT_CALLED:
        return _not_called(before, state, element, outcome, now, rules)
    return _engine_failed(before, state, element, outcome, now, rules)


def _request_after(before: NextState, outcome: Outcome) -> PaidRequest | None:
    """The URL's open paid request once this attempt is over: the one it submitted, else the one it
    found, unless that one was past its provider's retention."""
    if outcome.submitted is not None:
        return outcome.submitted
    return None if outcome.request_expired else before.request


def _element_call(element: SocialUrl, outcome: Outcome, now: datetime) -> tuple[int, datetime | None]:
    """The element's (attempts, last attempt) once this attempt is counted: moved only when a request left."""
    if outcome.called:
        return element.attempts + 1, now
    return element.attempts, element.attempted_at


def _with_status(state: NextState, now: datetime, rules: Rules) -> NextState:
    return replace(state, status=url_status(state, now, rules))


def _answered(
    before: NextState, element: SocialUrl, outcome: Outcome, address: str, now: datetime, rules: Rules
) -> Transition:
    """An answer: the streak and the engine failures end, the request is closed, the window's best answer stands."""
    assert outcome.status is not None
    this_answer = outcome.status
    better_stands = before.answer is not None and rank(before.answer) > rank(this_answer) and (
        before.answered_at is None or now - before.answered_at < rules.ttl
    )
    answered_at = now if outcome.called else None
    if better_stands:
        # A better answer that stands against this call's is anchored at this call: the URL was answered
        # now, and the answer it keeps is the best the window knows (its old anchor would expire first
        # and leave this call's answer, still fresh, unreused).
        answer, source = before.answer, before.source_token
        answered_at = now if outcome.called else before.answered_at
    else:
        answer, source = this_answer, (address if this_answer is FetchStatus.OK else None)
    next_state = _with_status(replace(
        before, answer=answer, answered_at=answered_at, source_token=source, streak=0, engine_failures=0,
        request=None, attempts=before.attempts + int(outcome.called),
        attempted_at=_last_call(before, now) if outcome.called else before.attempted_at), now, rules)
    attempts, attempted_at = _element_call(element, outcome, now)
    if better_stands and rules.reusable:
        assert answer is not None
        detail = f"{outcome.detail}; called and got {this_answer.value}, the window's better {answer.value} stands"
        return Transition(NextElement(answer, attempts, attempted_at, None, detail,
                                      copy_links_from=source if answer is FetchStatus.OK else None), next_state)
    return Transition(NextElement(this_answer, attempts, attempted_at, None, outcome.detail,
                                  own_links=this_answer is FetchStatus.OK), next_state)


def _call_failed(before: NextState, element: SocialUrl, outcome: Outcome, now: datetime, rules: Rules) -> Transition:
    """A failed call: one more failure of the live streak, unless a later call's answer is already
    stored; the window's fresh answer, if any, is the element's."""
    # A call that failed before the answer the state now holds (a holder whose call went out later
    # answered and wrote first) is not a failure since that answer: the streak it reset stays. Both
    # stores keep an answer's time to the microsecond, as two calls of one URL can fall in one
    # millisecond; an answer of this call's very microsecond counts (the safe side: one failure too
    # many stops the streak sooner, one too few would allow a call too many).
    failed_before_answer = before.answered_at is not None and before.answered_at > now
    streak = live_streak(before, now, rules) + (0 if failed_before_answer else 1)
    next_state = _with_status(replace(
        before, streak=streak, attempts=before.attempts + 1, attempted_at=_last_call(before, now), engine_failures=0,
        request=_request_after(before, outcome)), now, rules)
    attempts, attempted_at = _element_call(element, outcome, now)
    fresh = fresh_answer(_state_of(next_state), now, rules)
    if fresh is not None:
        answer, source = fresh
        detail = f"{outcome.detail}; the call failed, the window's {answer.value} stands"
        return Transition(NextElement(answer, attempts, attempted_at, None, detail, copy_links_from=source),
                          next_state)
    # A failure that came before an answer the window cannot hand over (a URL whose answers are
    # never reused) leaves the streak that answer reset: the element failed, and is due again.
    final = (resolve_final_status(streak - 1, FetchStatus.ERROR, True, rules.max_attempts) if streak
             else FetchStatus.ERROR)
    detail = outcome.detail
    if final is FetchStatus.EXHAUSTED:
        detail = f"{detail}; error -> exhausted after {streak} failed calls in a row"
    return Transition(NextElement(final, attempts, attempted_at, None, detail), next_state)


def _unreadable(before: NextState, element: SocialUrl, outcome: Outcome, now: datetime, rules: Rules) -> Transition:
    """A shape the generator cannot read: `unsupported`, with the call counted if one left (and the
    URL's status as it stands now: an answer that expired since the last write no longer shows). The
    streak kept is the one that still counts: moving the last call must not revive an expired one."""
    counted = (_with_status(replace(before, streak=live_streak(before, now, rules), attempts=before.attempts + 1,
                                    attempted_at=_last_call(before, now), request=_request_after(before, outcome)),
                            now, rules)
               if outcome.called else None)
    attempts, attempted_at = _element_call(element, outcome, now)
    if element.status in ABSORBING:  # a forced re-examination that learned nothing keeps its answer
        return Transition(NextElement(element.status, attempts, attempted_at, element.cause,
                                      f"{outcome.detail}; kept {element.status.value}"), counted)
    return Transition(NextElement(FetchStatus.UNSUPPORTED, attempts, attempted_at, Cause.UNPARSEABLE,
                                  outcome.detail), counted)


def _not_called(
    before: NextState, state: UrlState | None, element: SocialUrl, outcome: Outcome, now: datetime, rules: Rules
) -> Transition:
    """No call possible: the element takes the reason's status (a named answer is kept); the URL state is
    written only to close a request past its retention."""
    assert outcome.status is not None
    request = _request_after(before, outcome)
    closed = (_with_status(replace(before, request=request), now, rules)
              if request != before.request and state is not None else None)
    if element.status in ABSORBING:
        return Transition(_kept(element, state, now, rules, f"{outcome.detail}; no call made"), closed)
    return Transition(NextElement(outcome.status, element.attempts, element.attempted_at, outcome.cause,
                                  outcome.detail), closed)


def _engine_failed(
    before: NextState, state: UrlState | None, element: SocialUrl, outcome: Outcome, now: datetime, rules: Rules
) -> Transition:
    """Our code failed before any request: counted apart from calls, so a defect cannot be selected forever."""
    engine_failures = before.engine_failures + 1
    next_state = _with_status(replace(before, engine_failures=engine_failures,
                                      request=_request_after(before, outcome)), now, rules)
    detail = f"{outcome.detail}; our own code failed before any request ({engine_failures} of {rules.max_attempts})"
    if element.status in ABSORBING:
        return Transition(_kept(element, state, now, rules, detail), next_state)
    status = FetchStatus.EXHAUSTED if engine_failures >= rules.max_attempts else FetchStatus.ERROR
    return Transition(NextElement(status, element.attempts, element.attempted_at, Cause.ENGINE_FAILURE, detail),
                      next_state)


def _last_call(base: NextState, now: datetime) -> datetime:
    """The URL's last call once this one is counted: a holder whose call went out later may have
    written first, and the back-off runs from the latest call."""
    return now if base.attempted_at is None or base.attempted_at < now else base.attempted_at


def _kept(element: SocialUrl, state: UrlState | None, now: datetime, rules: Rules, detail: str) -> NextElement:
    """A named re-examination that learned nothing (no call was made) keeps its element's answer,
    unless the window holds a fresh one that differs: the element is recorded now, and holders
    recorded in one window agree."""
    window = fresh_answer(state, now, rules)
    if window is not None and window[0] is not element.status:
        answer, source = window
        return NextElement(answer, element.attempts, element.attempted_at, None,
                           f"{detail}; the window's {answer.value} stands", copy_links_from=source)
    return NextElement(element.status, element.attempts, element.attempted_at, element.cause,
                       f"{detail}; kept {element.status.value}")


def _state_of(n: NextState) -> UrlState:
    return UrlState(url="", platform="", status=n.status, answer=n.answer, answered_at=n.answered_at,
                    source_token=n.source_token, streak=n.streak, attempted_at=n.attempted_at,
                    attempts=n.attempts, engine_failures=n.engine_failures, request=n.request,
                    open_call=n.open_call)
