"""One recording of one (token, URL) while its URL lock is held: decide, maybe call, write once.

The order of the decision (docs/architecture.md, "Recording one URL"):

1. re-read the element inside the lock: `ok` is final; an element changed since the caller selected
   it was recorded by someone else, and stands;
2. the dedupe gate: a reusable answer for this URL within the TTL is copied (no call);
3. adopt instead of calling when the URL's budget says so: its calls are spent (`exhausted`), it was
   already called in this run, or another holder called it recently and got a transient failure
   (inside the back-off window) — a failing URL is bought at most `max_attempts` times in total;
4. otherwise call the platform's generator, with the HTTP layer reporting every request that left
   and re-checking the lock right before each paid one;
5. one fenced write: the element, the URL's state, the graph or the copied links. If a newer holder
   wrote in between, the write is refused and nothing changes; if not, a result paid for under a
   lease that was reported lost is still written (throwing it away would pay again).

An explicit retry of an absorbing status (not_found, blocked, invalid, exhausted) skips 2 and 3 once:
that is what naming it asks for.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime

from social_recording.domain.graph import PlannedLink, SocialContractError
from social_recording.domain.models import SocialUrl, UrlState
from social_recording.domain.policy import backoff_passed, resolve_final_status
from social_recording.domain.status import ABSORBING, RETRYABLE, Cause, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.base import Lease
from social_recording.outbound.observe import CallVetoed, observing
from social_recording.platforms.base import (
    PROVIDER_OF,
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GeneratorRegistry,
)
from social_recording.recording._text import describe_error, kv, safe_url
from social_recording.recording.call_guard import LeaseGuard, StoredPaidRequests
from social_recording.recording.gate import DedupeGate
from social_recording.recording.outcomes import EngineOutcome, OutcomeStatus, UrlOutcome
from social_recording.recording.run_state import RunState
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import ElementWrite, Store, UrlStateWrite, WriteOutcome, WriteResult

log = logging.getLogger("social_recording.recording")

_STATUS_OF_CODE: dict[ErrorCode, FetchStatus] = {
    ErrorCode.TARGET_BLOCKED: FetchStatus.BLOCKED,
    ErrorCode.UNSAFE_REDIRECT: FetchStatus.BLOCKED,
    ErrorCode.NOT_FOUND: FetchStatus.NOT_FOUND,
    ErrorCode.UNSUPPORTED: FetchStatus.UNSUPPORTED,
}
"""Provider errors that are answers about the target (or about our ability to read its URL).
Everything else (rate limits, timeouts, 5xx, credit) is a transient `error`."""


@dataclass(frozen=True)
class Settings:
    """The recorder's switches, shared by every attempt."""

    enable_paid: bool
    max_attempts: int


@dataclass
class _Result:
    """What the call path decided, before the write."""

    status: FetchStatus
    attempted: bool
    detail: str
    cause: Cause | None = None
    links: list[PlannedLink] | None = None
    engine_failure: bool = False


class UrlAttempt:
    """One invocation for one (token, URL) under a held URL lease. Build, `run()` once."""

    def __init__(
        self,
        *,
        store: Store,
        gate: DedupeGate,
        writer: GraphWriter,
        registry: GeneratorRegistry,
        settings: Settings,
        address: str,
        symbol: str | None,
        url: str,
        platform: Platform,
        snapshot: SocialUrl | None,
        lease: Lease,
        run: RunState,
        now: datetime,
        started: float,
        use_gate: bool = True,
    ) -> None:
        self._store = store
        self._gate = gate
        self._writer = writer
        self._registry = registry
        self._settings = settings
        self.address = address
        self._symbol = symbol
        self.url = url
        self.platform = platform
        self._snapshot = snapshot
        self._lease = lease
        self._run = run
        self._now = now
        self._started = started
        self._use_gate = use_gate
        self._previous: FetchStatus | None = None

    # ------------------------------------------------------------------ results

    def outcome(
        self,
        status: OutcomeStatus,
        *,
        attempted: bool = False,
        reused: bool = False,
        detail: str = "",
    ) -> UrlOutcome:
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
        )

    # ------------------------------------------------------------------ the decision

    def run(self) -> UrlOutcome:
        current = self._store.find_element(self.address, self.url)
        if current is None:
            return self.outcome(EngineOutcome.NO_ELEMENT, detail="no such token url in the store")
        self._previous = current.status
        if current.status is FetchStatus.OK:
            return self.outcome(FetchStatus.OK, detail="already ok")
        if self._snapshot is not None and _changed(self._snapshot, current):
            return self.outcome(current.status, detail="element changed since it was selected; left as is")
        state = self._gate.state(self.url)
        forced = current.status in ABSORBING and not self._run.called(self.url)
        if not forced:
            reused = self._reuse(current, state)
            if reused is not None:
                return reused
            adopted = self._adopt(current, state)
            if adopted is not None:
                return adopted
        return self._call(current, state)

    def _reuse(self, current: SocialUrl, state: UrlState | None) -> UrlOutcome | None:
        if not self._use_gate:
            return None
        hit = self._gate.lookup(self.url, self._now, state=state, read=False, platform=self.platform)
        if hit is None:
            return None
        detail = f"reused {hit.status.value}" + (f" of {hit.source_token}" if hit.source_token else "")
        element = ElementWrite(
            status=hit.status,
            attempts=current.attempts,
            attempted_at=current.attempted_at,
            checked_at=self._now,
            detail=detail,
        )
        written = self._writer.record(
            address=self.address, url=self.url, platform=self.platform.value, fence=self._lease.fence,
            now=self._now, element=element, copy_links_from=hit.source_token,
        )
        if written.result.applied and hit.source_token:
            detail = f"{detail} ({len(written.links)} links)"
        return self._written(written, hit.status, attempted=False, reused=True, detail=detail)

    def _adopt(self, current: SocialUrl, state: UrlState | None) -> UrlOutcome | None:
        """Record the URL's last answer without calling, when calling again would break its budget."""
        if state is None or state.status is FetchStatus.OK:
            return None
        max_attempts = self._settings.max_attempts
        if state.status is FetchStatus.EXHAUSTED or state.attempts >= max_attempts:
            status, cause = FetchStatus.EXHAUSTED, None
            detail = f"this URL already spent its {state.attempts} of {max_attempts} calls"
        elif self._run.called(self.url):
            status, cause = state.status, Cause.BACKOFF if state.status in RETRYABLE else None
            detail = f"{state.status.value} from this run's call of the URL for another token"
        elif state.status is FetchStatus.ERROR and not backoff_passed(state.attempted_at, self._now,
                                                                      self._run.min_interval):
            status, cause = FetchStatus.ERROR, Cause.BACKOFF
            when = state.attempted_at.isoformat() if state.attempted_at else "?"
            detail = f"error from another holder's call at {when}; called again after the back-off"
        else:
            return None
        if current.status is status and status in ABSORBING:
            return self.outcome(status, detail=f"{detail}; unchanged")
        element = ElementWrite(
            status=status,
            attempts=current.attempts,
            attempted_at=current.attempted_at,
            checked_at=self._now,
            cause=cause,
            detail=detail,
        )
        written = self._writer.record(
            address=self.address, url=self.url, platform=self.platform.value, fence=self._lease.fence,
            now=self._now, element=element,
        )
        return self._written(written, status, attempted=False, reused=False, detail=detail)

    # ------------------------------------------------------------------ the call

    def _call(self, current: SocialUrl, state: UrlState | None) -> UrlOutcome:
        result = self._generate(state)
        if isinstance(result, UrlOutcome):
            return result
        url_attempts = max(current.attempts, 0 if state is None else state.attempts)
        final = resolve_final_status(url_attempts, result.status, result.attempted, self._settings.max_attempts)
        detail = result.detail
        if final is not result.status:
            detail = f"{detail}; {result.status.value} -> {final.value} after {url_attempts + 1} calls of this URL"
        if not result.attempted and final in RETRYABLE and current.status in ABSORBING:
            # An explicit retry of an answer that made no call (paid calls off, credit or quota gone)
            # learned nothing: the known answer stands; overwriting it would make the gate pay again.
            return self.outcome(current.status, detail=f"{detail}; no call made, kept {current.status.value}")
        attempts = url_attempts + 1 if result.attempted else current.attempts
        element = ElementWrite(
            status=final,
            attempts=attempts,
            attempted_at=self._now if result.attempted else current.attempted_at,
            checked_at=self._now,
            cause=None if result.attempted else result.cause,
            detail=detail,
        )
        url_state = None
        if result.attempted or final in ABSORBING:
            url_state = UrlStateWrite(
                status=final,
                attempts=url_attempts + 1 if result.attempted else url_attempts,
                attempted_at=self._now if result.attempted else (None if state is None else state.attempted_at),
                source_token=self.address if final is FetchStatus.OK else None,
            )
        written = self._writer.record(
            address=self.address, url=self.url, platform=self.platform.value, fence=self._lease.fence,
            now=self._now, element=element, state=url_state,
            graph_links=result.links if final is FetchStatus.OK else None,
        )
        if written.result.applied and final is FetchStatus.OK and result.links is not None:
            detail = f"{detail}; {len(written.links)} links"
        outcome = self._written(written, final, attempted=result.attempted, reused=False, detail=detail)
        if result.engine_failure:
            return self.outcome(EngineOutcome.FAILED, attempted=result.attempted, detail=detail)
        return outcome

    def _generate(self, state: UrlState | None) -> _Result | UrlOutcome:
        """Run the generator (or decide without it): a result to write, or an outcome (nothing written)."""
        generator = self._registry.get(self.platform)
        if generator is None:
            return _Result(FetchStatus.UNSUPPORTED, False, self._registry.why_unavailable(self.platform),
                           cause=Cause.NO_GENERATOR)
        paid = self._registry.is_paid(self.platform)
        provider = PROVIDER_OF.get(self.platform, self.platform.value)
        if paid and not self._settings.enable_paid:
            return _Result(FetchStatus.SKIPPED_PAID, False, "paid calls are disabled", cause=Cause.PAID_DISABLED)
        if paid and self._run.credit_exhausted:
            return _Result(FetchStatus.SKIPPED_PAID, False, "provider credit exhausted earlier in this run",
                           cause=Cause.CREDIT_EXHAUSTED)
        if not paid and self._run.provider_exhausted(provider):
            return _Result(FetchStatus.ERROR, False, f"{provider} quota exhausted earlier in this run",
                           cause=Cause.CREDIT_EXHAUSTED)
        if self._lease.lost:
            return self.outcome(EngineOutcome.LOST, detail=f"URL lock lost before the call: {self._lease.lost_reason}")
        guard = LeaseGuard(self._lease)
        requests = StoredPaidRequests(self._store, self.url, self.platform.value, self._lease, state,
                                      lambda: self._now)
        symbol = self._symbol
        if symbol is None:  # the caller knew only the address: the symbol comes from our own document
            doc = self._store.find_token(self.address)
            symbol = None if doc is None else doc.symbol
        ctx = GenerateContext(token_address=self.address, token_symbol=symbol, requests=requests)
        self._run.mark_called(self.url)
        try:
            # The provider's call slot is taken here, inside the URL lock: the wait is for calls of other
            # URLs, which never wait for a lock themselves, so it cannot deadlock.
            with self._run.calls.slot(provider), observing(guard):
                generated = generator.generate(self.url, ctx)
            links = self._writer.plan(generated.graph)
        except CallVetoed as exc:
            self._run.note_paid_requests(guard.paid_sent)
            return self.outcome(EngineOutcome.LOST, attempted=guard.sent > 0, detail=str(exc))
        except SocialContractError as exc:
            self._run.note_paid_requests(guard.paid_sent)
            return _Result(FetchStatus.INVALID, guard.sent > 0, describe_error(exc))
        except ExternalFetchError as exc:
            self._run.note_paid_requests(guard.paid_sent)
            if exc.code is ErrorCode.CREDIT_EXHAUSTED:
                self._run.mark_exhausted(provider, paid=paid)
            status = _STATUS_OF_CODE.get(exc.code, FetchStatus.ERROR)
            cause = Cause.UNPARSEABLE if exc.code is ErrorCode.UNSUPPORTED else None
            return _Result(status, guard.sent > 0, describe_error(exc), cause=cause)
        except Exception as exc:  # our own code failed: a defect, never a guessed attempt
            self._run.note_paid_requests(guard.paid_sent)
            log.error(
                kv(event="engine_failure", token=self.address, url=safe_url(self.url), requests_sent=guard.sent,
                   error=type(exc).__name__),
                exc_info=True,
            )
            detail = f"engine failure: {describe_error(exc)} after {guard.sent} request(s)"
            if guard.sent == 0:
                return self.outcome(EngineOutcome.FAILED, detail=f"{detail}; attempts unchanged")
            return _Result(FetchStatus.ERROR, True, f"{detail}; recorded as a call so the back-off holds",
                           engine_failure=True)
        self._run.note_paid_requests(guard.paid_sent)
        resumed = f"; resumed {requests.resumed}" if requests.resumed else ""
        return _Result(FetchStatus.OK, guard.sent > 0, f"{guard.sent} request(s){resumed}", links=links)

    # ------------------------------------------------------------------ the write

    def _written(
        self, written: WriteOutcome, status: FetchStatus, *, attempted: bool, reused: bool, detail: str
    ) -> UrlOutcome:
        result = written.result
        if result is WriteResult.APPLIED:
            if self._lease.lost:
                detail = f"{detail}; written after the URL lock was reported lost (no newer holder had written)"
                log.warning(kv(event="written_after_lease_loss", token=self.address, url=safe_url(self.url)))
            return self.outcome(status, attempted=attempted, reused=reused, detail=detail)
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


def _changed(snapshot: SocialUrl, current: SocialUrl) -> bool:
    """Whether someone recorded this element after the caller read it."""
    return (snapshot.status, snapshot.attempts, snapshot.checked_at) != (
        current.status, current.attempts, current.checked_at
    )
