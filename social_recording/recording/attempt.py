"""One recording of one (token, URL) under its URL lock: the state machine decides, this carries it out.

Read the element and the URL state, `decide`, maybe call the generator (the HTTP layer reports every
request that left and re-checks the lock before each paid one), then hand the store one write made
on the state version that was read. When a late holder moved the state on in between (STALE), read
again: a no-call decision is taken anew, a call's outcome is merged into the newer state by `after`,
so a paid answer is never thrown away and never overwrites a better one. docs/architecture.md,
"The per-URL state machine" and "Recording one URL".
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.graph import PlannedLink, SocialContractError
from social_recording.domain.models import SocialUrl, UrlState
from social_recording.domain.policy import DEFAULT_BACKOFF, Backoff
from social_recording.domain.spend import SpendLine, day_key
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.url_machine import (
    Act,
    Decision,
    Outcome,
    Result,
    Rules,
    RunIntent,
    Selected,
    Transition,
    after,
    decide,
    element_due_at,
    without_call,
)
from social_recording.domain.urls import Platform
from social_recording.locks.base import Lease
from social_recording.locks.spend_budget import SpendBudgets
from social_recording.outbound.observe import CallVetoed, observing
from social_recording.platforms.base import (
    PROVIDER_OF,
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GeneratorRegistry,
)
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording._text import describe_error, kv, safe_url
from social_recording.recording.answer_spool import AnswerSpool, SpooledAnswer
from social_recording.recording.call_guard import LeaseGuard, PaidCallNotRecorded, StoredPaidRequests
from social_recording.recording.outcomes import EngineOutcome, OutcomeStatus, UrlOutcome, Written
from social_recording.recording.run_state import RunState
from social_recording.recording.spend_check import SpendGuard, SpendHeld
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import ElementWrite, Store, WriteOutcome, WriteResult
from social_recording.store.transient import is_disk_full

log = logging.getLogger("social_recording.recording")

STALE_ROUNDS = 5
"""How often one recording reads the URL state again after a late holder moved it on. Each round
needs another holder's write in between; past this many the URL is left to the next run."""

_ANSWER_OF_CODE: dict[ErrorCode, FetchStatus] = {
    ErrorCode.TARGET_BLOCKED: FetchStatus.BLOCKED,
    ErrorCode.UNSAFE_REDIRECT: FetchStatus.BLOCKED,
    ErrorCode.NOT_FOUND: FetchStatus.NOT_FOUND,
}
"""Provider errors that are answers about the target. Everything else but an unreadable shape
(rate limits, timeouts, 5xx, credit) is a transient failure."""


@functools.lru_cache(maxsize=256)
def rules_for(platform: Platform, *, max_attempts: int, min_interval: timedelta,
              backoff: Backoff = DEFAULT_BACKOFF) -> Rules:
    """The state machine's rules for one URL of `platform` (whether its answers may be reused is the
    platform descriptor's word); frozen, so one per setting is shared by every attempt."""
    return Rules(max_attempts, min_interval, reusable=CATALOGUE[platform].reusable, backoff=backoff)


@dataclass(frozen=True)
class RecorderSwitches:
    """The recorder's switches, shared by every attempt."""

    enable_paid: bool
    max_attempts: int
    budgets: SpendBudgets | None = None
    """The shared spend budgets asked before each new paid request (None: no budget anywhere)."""
    backoff: Backoff = DEFAULT_BACKOFF
    """The back-off policy every recording dates its element's next due time by."""


class UrlAttempt:
    """One invocation for one (token, URL) under a held URL lease. Build, `run()` once."""

    def __init__(
        self,
        *,
        store: Store,
        writer: GraphWriter,
        registry: GeneratorRegistry,
        settings: RecorderSwitches,
        address: str,
        symbol: str | None,
        url: str,
        platform: Platform,
        selected: Selected | None,
        lease: Lease,
        run: RunState,
        now: datetime,
        started: float,
        clock: Callable[[], datetime],
        spool: AnswerSpool | None = None,
    ) -> None:
        self._spool = spool
        self._clock = clock
        self._store = store
        self._writer = writer
        self._registry = registry
        self._settings = settings
        self.address = address
        self._symbol = symbol
        self.url = url
        self.platform = platform
        self._selected = selected
        self._lease = lease
        self._run = run
        self._now = now
        self._started = started
        self._rules = rules_for(platform, max_attempts=settings.max_attempts, min_interval=run.min_interval,
                                backoff=settings.backoff)
        self._request: RunIntent = run.request_or_live(now)
        self._previous: FetchStatus | None = None
        self._spend: SpendGuard | None = None
        self._requests: StoredPaidRequests | None = None

    def outcome(self, status: OutcomeStatus, *, attempted: bool = False, reused: bool = False,
                detail: str = "", written: frozenset[Written] = frozenset()) -> UrlOutcome:
        return UrlOutcome(
            token=self.address,
            url=self.url,
            platform=self.platform.value,
            status=status,
            attempted=attempted,
            reused=reused,
            waited_ms=self._lease.waited_ms,
            took_ms=(time.monotonic() - self._started) * 1000.0,
            detail=detail,
            previous=self._previous,
            lease_lost=self._lease.lost,
            written=written,
        )

    # ------------------------------------------------------------------ the decision

    def run(self) -> UrlOutcome:
        waiting = self._write_spooled_answer()
        if waiting is not None:
            return waiting
        for _ in range(STALE_ROUNDS):
            read = self._read()
            if isinstance(read, UrlOutcome):
                return read
            element, state = read
            decision = decide(state, element, request=self._request, selected=self._selected, now=self._now,
                              rules=self._rules, read_nothing=self._run.read_nothing(self.url))
            if decision.act is Act.LEAVE:
                assert decision.status is not None
                return self.outcome(decision.status, detail=decision.detail)
            if decision.calls:
                return self._call(element, state, decision)
            assert decision.status is not None
            written = self._write(without_call(decision, element, self._now), state, links=None)
            if written.result is not WriteResult.STALE:
                return self._written(written, decision.status, attempted=False, reused=decision.act is Act.REUSE,
                                     detail=self._with_links(written, decision.detail, decision.source_token))
            self._moment_after_a_stale_write()
        return self._gave_up()

    def _moment_after_a_stale_write(self) -> None:
        """Another holder wrote since this attempt's moment: what is decided again (maybe a call) comes
        after that write, so it is dated by a fresh reading of the clock, never before an answer it read
        (a failed call dated earlier would fall out of the streak since that answer: docs/architecture.md,
        "Fencing")."""
        self._now = max(self._now, self._clock())

    def _write_spooled_answer(self) -> UrlOutcome | None:
        """A paid answer the store could not take earlier is written before anything is decided (so
        nothing pays for it again); None when there was none, or it is written now."""
        spooled = None if self._spool is None else self._spool.find(self.url)
        if spooled is None or self._spool is None:
            return None
        outcome, decision, links = spooled.outcome(), spooled.decision(), spooled.planned()
        for _ in range(STALE_ROUNDS):
            element = self._store.find_element(spooled.address, self.url)
            if element is None:  # its token is gone: nobody to write it for
                self._spool.done(self.url)
                return None
            state = self._store.find_url_state(self.url)
            transition = after(state, element, outcome, decision=decision, address=spooled.address,
                               now=spooled.called_at, rules=self._rules)
            try:
                written = self._write(transition, state, links=links, address=spooled.address)
            except Exception as exc:
                return self.outcome(EngineOutcome.DEFERRED,
                                    detail=f"a paid answer for this URL waits in the spool and the store still "
                                           f"cannot take it ({describe_error(exc)}); nothing sent")
            if written.result is WriteResult.STALE:
                continue
            self._spool.done(self.url)
            log.info(kv(event="spooled_answer_written", token=spooled.address, url=safe_url(self.url),
                        status=outcome.status, result=written.result.value))
            return None
        return self._gave_up()

    def _read(self) -> tuple[SocialUrl, UrlState | None] | UrlOutcome:
        element = self._store.find_element(self.address, self.url)
        if element is None:
            return self.outcome(EngineOutcome.NO_ELEMENT, detail="no such token url in the store")
        if self._previous is None:
            self._previous = element.status
        return element, self._store.find_url_state(self.url)

    def _gave_up(self, attempted: bool = False) -> UrlOutcome:
        return self.outcome(EngineOutcome.LOST, attempted=attempted,
                            detail=f"the URL's state kept changing under {STALE_ROUNDS} reads; left for the next run")

    # ------------------------------------------------------------------ the call

    def _call(self, element: SocialUrl, state: UrlState | None, decision: Decision) -> UrlOutcome:
        done = self._generate(state, decision)
        if isinstance(done, UrlOutcome):
            return done
        outcome, links, engine_failure = done
        if outcome.result is Result.UNREADABLE and outcome.called:
            self._run.note_read_nothing(self.url)  # its other holders in this run do not buy it again
        for _ in range(STALE_ROUNDS):
            transition = after(state, element, outcome, decision=decision, address=self.address, now=self._now,
                               rules=self._rules)
            if transition.element is None:  # deferred: nothing sent, nothing learned
                return self.outcome(EngineOutcome.DEFERRED, detail=f"{outcome.detail}; left as it was")
            try:
                written = self._write(transition, state, links=links, spend=self._spend_line())
            except Exception as exc:
                return self._unwritten(exc, outcome, state, SpooledAnswer.of(
                    self.address, self.url, self._now, outcome, decision, links)
                    if outcome.result is Result.ANSWER and outcome.called else None)
            if written.result is WriteResult.STALE:
                read = self._read()
                if isinstance(read, UrlOutcome):
                    return read
                element, state = read
                continue
            status = transition.element.status
            detail = self._with_links(written, transition.element.detail, transition.element.copy_links_from)
            if written.result.applied and transition.element.own_links and links is not None:
                detail = f"{detail}; {len(written.links)} links"
            result = self._written(written, status, attempted=outcome.called,
                                   reused=transition.element.copy_links_from is not None, detail=detail,
                                   graph=links if transition.element.own_links else None)
            if engine_failure or outcome.result is Result.ENGINE:
                return self.outcome(EngineOutcome.FAILED, attempted=outcome.called, detail=result.detail,
                                    written=result.written)
            return result
        return self._gave_up(attempted=outcome.called)

    def _unwritten(self, exc: Exception, outcome: Outcome, state: UrlState | None,
                   answer: SpooledAnswer | None) -> UrlOutcome:
        """The store refused the result of a call (a full disk past the write retry, a store gone):
        the URL fails, truthfully `attempted`; an answer is kept in the spool for the next run to
        write before any new call, and an open paid request, saved when it was submitted, stays on
        the URL for the next run to resume instead of buying it again."""
        log.error(kv(event="result_not_written", token=self.address, url=safe_url(self.url), called=outcome.called,
                     error=type(exc).__name__), exc_info=True)
        why = f"its disk is full: {describe_error(exc)}" if is_disk_full(exc) else describe_error(exc)
        request = outcome.submitted
        if request is None and state is not None and not outcome.request_expired:
            request = state.request
        kept = (f"; the paid {request.provider} request {request.request_id} stays open for the next run to resume"
                if request is not None else "; left for the next run")
        if answer is not None and self._spool is not None and self._spool.put(answer):
            kept = "; its answer is kept in the spool, written by the next run before any new call"
        return self.outcome(EngineOutcome.FAILED, attempted=outcome.called,
                            detail=f"the store did not take the result of {outcome.detail or 'the call'} "
                                   f"({why}){kept}")

    def _generate(
        self, state: UrlState | None, decision: Decision
    ) -> tuple[Outcome, list[PlannedLink] | None, bool] | UrlOutcome:
        """Run the generator (or find a reason not to): what it brought back, the planned links of an
        `ok`, and whether our own code failed after a request left; or an outcome when nothing may be
        written (the lease is gone)."""
        generator = self._registry.get(self.platform)
        if generator is None:
            return self._not_called(FetchStatus.UNSUPPORTED, Cause.NO_GENERATOR,
                                    self._registry.why_unavailable(self.platform))
        paid = self._registry.is_paid(self.platform)
        provider = PROVIDER_OF.get(self.platform, self.platform.value)
        if paid and not self._settings.enable_paid:
            return self._not_called(FetchStatus.SKIPPED_PAID, Cause.PAID_DISABLED, "paid calls are disabled")
        if self._run.exhausted(provider):  # that account's credit or quota only: the others' go on
            if paid:
                return self._not_called(FetchStatus.SKIPPED_PAID, Cause.CREDIT_EXHAUSTED,
                                        f"{provider} credit exhausted earlier in this run")
            return self._not_called(FetchStatus.ERROR, Cause.CREDIT_EXHAUSTED,
                                    f"{provider} quota exhausted earlier in this run")
        if self._lease.lost:
            return self.outcome(EngineOutcome.LOST, detail=f"URL lock lost before the call: {self._lease.lost_reason}")
        requests = StoredPaidRequests(self._store, self.url, self.platform.value, self._lease,
                                      state.request if state is not None else None, lambda: self._now,
                                      retry_s=self._writer.retry_s,
                                      open_call=state.open_call if state is not None else None,
                                      unentered=self._spend_line)
        guard = LeaseGuard(self._lease, record_paid=requests.open_call)
        spend = self._spend = SpendGuard(guard, self._settings.budgets,
                                         lambda: requests.resumed is not None or requests.submitted_request is not None)
        self._requests = requests
        symbol = self._symbol
        if symbol is None:  # the caller knew only the address: the symbol comes from our own document
            doc = self._store.find_token(self.address)
            symbol = None if doc is None else doc.symbol
        ctx = GenerateContext(token_address=self.address, token_symbol=symbol, requests=requests)

        def done(result: Result, status: FetchStatus | None = None, detail: str = "", *,
                 cause: Cause | None = None, links: list[PlannedLink] | None = None,
                 engine: bool = False) -> tuple[Outcome, list[PlannedLink] | None, bool]:
            self._run.note_paid_requests(guard.paid_sent)
            called = guard.sent > 0
            if result is Result.FAILED and not called:
                result = Result.NOT_CALLED
                status = FetchStatus.ERROR
            if result is Result.ANSWER and status is None:
                status = FetchStatus.OK
            return Outcome(result, status=status, called=called, cause=cause, detail=detail,
                           submitted=requests.submitted_request, request_expired=requests.expired,
                           opened=requests.opened), links, engine

        try:
            # The provider's call slot is taken here, inside the URL lock: the wait is for calls of other
            # URLs, which never wait for a lock themselves, so it cannot deadlock.
            with self._run.calls.slot(provider), observing(spend):
                generated = generator.generate(self.url, ctx)
            links = self._writer.plan(generated.graph)
        except SpendHeld as exc:  # docs/architecture.md, "Spend budgets": nothing sent for this request
            if guard.sent:
                return done(Result.FAILED, detail=f"{exc} (after {guard.sent} request(s) of this call)")
            if exc.reached is None:
                return done(Result.DEFERRED, detail=str(exc))
            self._run.note_budget_held()
            return self._not_called(FetchStatus.SKIPPED_PAID, Cause.SPEND_BUDGET, str(exc))
        except PaidCallNotRecorded as exc:
            self._run.note_paid_requests(guard.paid_sent)
            log.error(kv(event="paid_call_not_recorded", token=self.address, url=safe_url(self.url)))
            return self.outcome(EngineOutcome.DEFERRED, attempted=guard.sent > 0, detail=str(exc))
        except CallVetoed as exc:
            self._run.note_paid_requests(guard.paid_sent)
            return self.outcome(EngineOutcome.LOST, attempted=guard.sent > 0, detail=str(exc))
        except SocialContractError as exc:
            return done(Result.ANSWER, FetchStatus.INVALID, describe_error(exc))
        except ExternalFetchError as exc:
            if exc.code is ErrorCode.CREDIT_EXHAUSTED:
                self._run.mark_exhausted(provider)
            detail = describe_error(exc)
            if exc.code in _ANSWER_OF_CODE:
                return done(Result.ANSWER, _ANSWER_OF_CODE[exc.code], detail)
            if exc.code is ErrorCode.UNSUPPORTED:
                return done(Result.UNREADABLE, detail=detail)
            if exc.code is ErrorCode.LIMITER_UNAVAILABLE and guard.sent == 0:
                return done(Result.DEFERRED, detail=detail)
            if exc.code is ErrorCode.RATE_LIMITED and guard.sent == 0:
                return done(Result.NOT_CALLED, FetchStatus.ERROR, detail, cause=Cause.RATE_LIMIT)
            return done(Result.FAILED, detail=detail)
        except Exception as exc:  # our own code failed: a defect, never a guessed attempt
            log.error(
                kv(event="engine_failure", token=self.address, url=safe_url(self.url), requests_sent=guard.sent,
                   error=type(exc).__name__),
                exc_info=True,
            )
            detail = f"engine failure: {describe_error(exc)} after {guard.sent} request(s)"
            if guard.sent == 0:
                return done(Result.ENGINE, detail=detail, engine=True)
            return done(Result.FAILED, detail=f"{detail}; recorded as a failed call so the back-off holds",
                        engine=True)
        resumed = f"; resumed {requests.resumed}" if requests.resumed else ""
        return done(Result.ANSWER, FetchStatus.OK, f"{guard.sent} request(s){resumed}", links=links)

    def _not_called(self, status: FetchStatus, cause: Cause, detail: str) -> tuple[Outcome, None, bool]:
        return Outcome(Result.NOT_CALLED, status=status, cause=cause, detail=detail), None, False

    # ------------------------------------------------------------------ the write

    def _spend_line(self) -> SpendLine | None:
        """The ledger line of this call: its new paid requests not entered with its saved submission,
        written with its outcome."""
        n = 0 if self._spend is None else self._spend.new_paid - (0 if self._requests is None else self._requests.entered)
        if not n:
            return None
        account = CATALOGUE[self.platform].account
        return SpendLine(account.name, day_key(self._now), n, n * (account.unit_price_usd or 0.0))

    def _write(self, transition: Transition, state: UrlState | None, *,
               links: list[PlannedLink] | None, address: str | None = None,
               spend: SpendLine | None = None) -> WriteOutcome:
        el = transition.element
        assert el is not None
        element = ElementWrite(status=el.status, attempts=el.attempts, attempted_at=el.attempted_at,
                               checked_at=self._now, cause=el.cause, detail=el.detail,
                               due_at=element_due_at(transition, state, self._now, self._rules))
        return self._writer.record(
            address=address or self.address, url=self.url, platform=self.platform.value, fence=self._lease.fence,
            now=self._now, element=element, state=transition.state,
            expect_version=0 if state is None else state.version,
            graph_links=links if el.own_links else None, copy_links_from=el.copy_links_from,
            spend=spend if transition.state is not None else None,  # counted on the URL state it goes with
        )

    @staticmethod
    def _with_links(written: WriteOutcome, detail: str, source: str | None) -> str:
        if written.result.applied and source:
            return f"{detail} ({len(written.links)} links)"
        return detail

    def _written(
        self, written: WriteOutcome, status: FetchStatus, *, attempted: bool, reused: bool, detail: str,
        graph: list[PlannedLink] | None = None,
    ) -> UrlOutcome:
        result = written.result
        if result is WriteResult.APPLIED:
            if self._lease.lost:
                detail = f"{detail}; written after the URL lock was reported lost (no newer holder had written)"
                log.warning(kv(event="written_after_lease_loss", token=self.address, url=safe_url(self.url)))
            return self.outcome(status, attempted=attempted, reused=reused, detail=detail,
                                written=_collections(written, graph))
        if result is WriteResult.OK_KEPT:
            return self.outcome(FetchStatus.OK, attempted=attempted, reused=reused,
                                detail=f"already ok (recorded by another holder); our {status.value} not written")
        if result is WriteResult.NO_ELEMENT:
            return self.outcome(EngineOutcome.NO_ELEMENT, attempted=attempted, detail="the element vanished")
        log.warning(kv(event="write_fenced", token=self.address, url=safe_url(self.url), fence=self._lease.fence,
                       newer=written.applied_fence))
        return self.outcome(
            EngineOutcome.LOST, attempted=attempted, reused=reused,
            detail=f"a newer holder of the URL lock wrote first (fence {written.applied_fence or '?'} > "
                   f"{self._lease.fence}); our {status.value} was not written",
        )


def _collections(written: WriteOutcome, graph: list[PlannedLink] | None) -> frozenset[Written]:
    """What an applied write touched: the element always; the token's links when it has any; the
    objects (and their first metric values) when they came from this call's graph."""
    out = {Written.TOKEN_URLS}
    if written.links:
        out.add(Written.TOKEN_LINKS)
    if graph:
        out |= {Written.of_kind(link.kind) for link in graph}
        if any(link.obj.metrics for link in graph):
            out.add(Written.METRICS)
    return frozenset(out)
