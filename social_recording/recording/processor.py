"""Recording a token: `record` (live path, reconcile), `record_urls` and `resolve_unresolved` (retry).

The token lock is try-once: another worker holding it is doing the same work, so waiting would only
tie up a slot. A run records the tokens it found locked out once more at its end, each waiting for its
lock up to TOKEN_LOCK_WAIT_S (recording/run_driver.py): a live holder has finished by then and the
token is up to date, a crashed one's lock has expired and the run does the work; only what is still
held is reported left behind. The lock is renewed while held, so URL-lock waits inside it never erode it. A new token is
pre-created with every URL `pending` right after the upstream read (its existence means "seen", not
"finished"), then each URL is recorded and written on its own. A token's URLs are recorded side by
side (up to the run's `calls.per_token`), each in its own thread holding exactly one URL lock; the
token's worker holds only the token lock while it waits for them (recording/concurrency.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime, timedelta

from social_recording.domain.bounds import above, at_least
from social_recording.domain.models import TokenDoc, UnresolvedValue, utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL, due_by
from social_recording.domain.status import REALTIME
from social_recording.domain.url_machine import RunIntent, Selected, Why
from social_recording.domain.urls import Platform, platform_of
from social_recording.locks.base import Lease, LockManager
from social_recording.recording._text import describe_error, kv, safe_url
from social_recording.recording.concurrency import url_pool
from social_recording.recording.outcomes import EngineOutcome, TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.run_driver import RunDriver
from social_recording.recording.run_state import RunState
from social_recording.recording.sources import ProfileSource
from social_recording.recording.url_recorder import TokenRef, UrlRecorder, emit
from social_recording.store.base import Store
from social_recording.upstream.profile import DroppedValue, UnresolvedValueError
from social_recording.upstream.tracker import MalformedTrackerItem

log = logging.getLogger("social_recording.recording")

TOKEN_LOCK_TTL_S = 60.0
"""Only the renewal interval basis and how long a crashed holder blocks the token."""
TOKEN_LOCK_WAIT_S = TOKEN_LOCK_TTL_S + 15.0
"""How long a run's second look at a locked-out token waits for its lock: past a crashed holder's TTL."""
TOKEN_LOCK_PREFIX = "social-record:"



def _check_address(address: object) -> str:
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"token address must be a non-empty string, got {address!r}")
    return address


def _platform_or_none(url: str) -> Platform | None:
    try:
        return platform_of(url)
    except Exception:
        return None


def _held_elsewhere(wait: float) -> str:
    if wait > 0:
        return f"token lock held by another worker for the whole {wait:g} s wait"
    return "token lock held by another worker"


def failed_token(address: str, exc: Exception) -> TokenOutcome:
    """A token whose recording raised past every guard of `TokenProcessor.record` (a defect of ours):
    logged, and reported as failed so the run says so."""
    log.warning(kv(event="token_failed", token=address, error=type(exc).__name__), exc_info=exc)
    return TokenOutcome(address, TokenStatus.FAILED, detail=describe_error(exc))


class TokenProcessor:
    def __init__(
        self,
        store: Store,
        locks: LockManager,
        profiles: ProfileSource,
        recorder: UrlRecorder,
        *,
        token_lock_ttl: float = TOKEN_LOCK_TTL_S,
        token_lock_wait: float = TOKEN_LOCK_WAIT_S,
        min_interval: timedelta = DEFAULT_MIN_INTERVAL,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if min_interval < timedelta(0):
            raise ValueError(f"min_interval must be >= 0, got {min_interval!r}")
        self._store = store
        self._locks = locks
        self._profiles = profiles
        self._recorder = recorder
        self._token_lock_ttl = above("token_lock_ttl", token_lock_ttl, 0, "seconds")
        self.token_lock_wait = at_least("token_lock_wait", token_lock_wait, 0, "seconds")
        self._min_interval = min_interval
        self._clock = clock

    @property
    def store(self) -> Store:
        return self._store

    @property
    def locks(self) -> LockManager:
        return self._locks

    @property
    def recorder(self) -> UrlRecorder:
        return self._recorder

    def new_run(self, why: Why = Why.LIVE) -> RunState:
        """A run state with this processor's back-off (the live path's), starting now."""
        return RunState(self._min_interval, request=self.request(why))

    def request(self, why: Why) -> RunIntent:
        """What a live or reconcile run asks for, starting now (this processor's clock)."""
        return RunIntent(why, since=self._clock())

    # ------------------------------------------------------------------ live path and reconcile
    def record_batch(
        self, tokens: Sequence[tuple[str, str | None]], run: RunState, *, max_workers: int
    ) -> list[TokenOutcome]:
        """Record a live batch of (address, symbol), `max_workers` tokens at a time, in order; without
        their per-URL outcomes (counted in `run`), so a batch of any size costs the same memory.
        Interrupted, it finishes the tokens in flight and starts no other."""

        def one(token: tuple[str, str | None], wait: float) -> TokenOutcome:
            return replace(self.record(token[0], token[1], run, lock_wait=wait), urls=())

        driver = RunDriver(run, max_workers, self.token_lock_wait)
        return driver.drive(tokens, one, lambda token, exc: failed_token(token[0], exc), status=lambda outcome: outcome,
                            unit_name="token(s)",
                            then="the token_flow_sensor's next batches or the daily reconcile record them")[1]

    def _token_lock(self, address: str, wait: float) -> AbstractContextManager[Lease]:
        """Try once (wait 0), or wait up to `wait` seconds for the token's lock."""
        key = TOKEN_LOCK_PREFIX + address
        if wait > 0:
            return self._locks.hold_within(key, self._token_lock_ttl, wait)
        return self._locks.try_hold(key, self._token_lock_ttl)

    def record(self, address: str, symbol: str | None, run: RunState | None = None, *,
               lock_wait: float = 0.0) -> TokenOutcome:
        """Record one token. Never raises for the token's own trouble. `run` shares per-run state
        (credit exhaustion, counters, URLs already called) across tokens; one per call by default.
        `lock_wait`: 0 tries the token lock once; more waits that long for it (a run's second look)."""
        address = _check_address(address)
        run = run if run is not None else self.new_run()
        started = time.monotonic()
        holder: list[TokenOutcome] = []

        def done(status: TokenStatus, urls: list[UrlOutcome] | None = None, *, created: bool = False,
                 detail: str = "", profile_dropped: tuple = (), unresolved: int = 0) -> TokenOutcome:
            outcome = TokenOutcome(address, status, tuple(urls or ()), created, detail,
                                   (time.monotonic() - started) * 1000.0, profile_dropped, unresolved)
            log.log(
                logging.WARNING if status in (TokenStatus.FAILED, TokenStatus.MALFORMED) else logging.INFO,
                kv(event="token_recorded", token=address, status=status.value, created=created,
                   urls=len(outcome.urls), took_ms=round(outcome.took_ms), detail=detail),
            )
            holder.append(outcome)
            return outcome

        try:
            with self._token_lock(address, lock_wait) as lease:
                if not lease.held:
                    return done(TokenStatus.LOCKED_OUT, detail=_held_elsewhere(lock_wait))
                return self._record_held(address, symbol, lease, run, done)
        except Exception as exc:  # upstream read, store or lock backend: this token only
            if holder:  # only the release failed; the key expires by its TTL
                log.warning(kv(event="token_lock_release_failed", token=address, error=type(exc).__name__))
                return holder[-1]
            log.warning(kv(event="token_failed", token=address, error=type(exc).__name__), exc_info=True)
            return done(TokenStatus.FAILED, detail=describe_error(exc))

    def _record_held(self, address: str, symbol: str | None, lease: Lease, run: RunState,
                     done: Callable[..., TokenOutcome]) -> TokenOutcome:
        doc = self._store.find_token(address)
        created = False
        dropped: tuple = ()
        unresolved = 0
        token: TokenRef
        if doc is None:
            try:
                profile = self._profiles.read(address)  # the only upstream call: never for a stored token
            except MalformedTrackerItem as exc:
                # The tracker answered with an item we cannot read: not "no profile" (the token exists),
                # nothing stored, so the next reconcile of its window tries again.
                return done(TokenStatus.MALFORMED, detail=exc.reason)
            if profile is None:
                return done(TokenStatus.NO_PROFILE,
                            detail="the tracker has no usable profile (unknown address or no image); nothing stored")
            if profile.address != address:
                return done(TokenStatus.FAILED, detail=f"profile is for another address {profile.address!r}")
            dropped = tuple(profile.dropped)
            unresolved = len(profile.unresolved)
            created = self._store.create_pending_token(profile, self._clock())
            if created:
                targets = list(profile.urls)
                token = (address, profile.symbol if profile.symbol is not None else symbol)
            else:
                # Someone created it meanwhile (insert-only): continue from what is stored.
                doc = self._store.find_token(address)
                if doc is None:
                    return done(TokenStatus.FAILED, detail="token vanished after a concurrent create")
                targets = self._realtime_targets(doc)
                token = doc
        else:
            targets = self._realtime_targets(doc)
            token = doc
        if isinstance(token, TokenDoc) and token.symbol is None and symbol is not None:
            token = token.model_copy(update={"symbol": symbol})
        if not targets:
            return done(TokenStatus.UP_TO_DATE, created=created, detail="no url due on the live path",
                        profile_dropped=dropped, unresolved=unresolved)

        outcomes = self.record_targets(token, targets, run, lambda: lease.lost)
        if len(outcomes) < len(targets):
            return done(TokenStatus.LOST, outcomes, created=created,
                        detail=f"token lock lost after {len(outcomes)} of {len(targets)} urls",
                        profile_dropped=dropped, unresolved=unresolved)
        return done(TokenStatus.RECORDED, outcomes, created=created, profile_dropped=dropped, unresolved=unresolved)

    def record_targets(
        self,
        token: TokenRef,
        urls: Sequence[str],
        run: RunState,
        stop: Callable[[], bool],
        selected: Mapping[str, Selected] | None = None,
    ) -> list[UrlOutcome]:
        """Record `urls` of one token, up to `run.calls.per_token` at once, each in its own thread with
        its own URL lock (the caller holds the token lock). A URL not yet started when `stop()` turns
        true is left as it is for the next run; the outcomes of the started ones come back in URL order.
        `selected`: the elements as the run selected them (retry), by URL."""
        picked = selected or {}
        at_once = min(run.calls.per_token, len(urls))
        if at_once <= 1:
            out: list[UrlOutcome] = []
            for url in urls:
                if stop():
                    break
                out.append(self._record_url_isolated(token, url, run, picked.get(url)))
            return out

        def one(url: str) -> UrlOutcome | None:
            return None if stop() else self._record_url_isolated(token, url, run, picked.get(url))

        pool = url_pool()
        results: dict[int, UrlOutcome | None] = {}
        pending = list(enumerate(urls))
        running: dict[Future[UrlOutcome | None], int] = {}
        while pending or running:
            while pending and len(running) < at_once:
                index, url = pending.pop(0)
                running[pool.submit(one, url)] = index
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done:
                results[running.pop(fut)] = fut.result()
        return [r for i in sorted(results) if (r := results[i]) is not None]

    def _realtime_targets(self, doc: TokenDoc) -> list[str]:
        """Only pending and error reopen on the live path (skipped_paid / unsupported wait for the retry
        job), and only once due (the element's stored due time, dated from its last recording whether
        or not a call was made then, so a live event every minute cannot reopen an element every minute)."""
        moment = due_by(self._clock(), self._min_interval)
        return [el.url for el in doc.social_urls if el.status in REALTIME and el.due_by(moment)]

    def _record_url_isolated(self, token: TokenRef, url: str, run: RunState,
                             selected: Selected | None = None) -> UrlOutcome:
        try:
            return self._recorder.record_url(token, url, run, selected)
        except Exception as exc:  # the recorder isolates its own trouble; this is a last guard
            address = token.address if isinstance(token, TokenDoc) else token[0]
            log.error(kv(event="url_failed", token=address, url=safe_url(url), error=type(exc).__name__),
                      exc_info=True)
            return emit(run, UrlOutcome(address, url, None, EngineOutcome.FAILED, False, False, 0.0, 0.0,
                                        describe_error(exc)))

    # ------------------------------------------------------------------ retry path
    def record_urls(
        self,
        address: str,
        urls: Sequence[str],
        run: RunState,
        stop: Callable[[], bool] = lambda: False,
        selected: Mapping[str, Selected] | None = None,
        *,
        lock_wait: float = 0.0,
        emit_locked_out: bool = True,
    ) -> list[UrlOutcome]:
        """The retry path: the same try-once token lock, taken once for the token's batch, NO upstream
        call (the symbol comes from our document, read once), then `record_url` for each URL side by
        side (`record_targets`), which routes with the URL's platform anew. One outcome per URL
        started; URLs not started when `stop()` turned true have none. `selected` holds the elements as
        the retry selection saw them, before this token lock: one recorded since then is left as is.
        `lock_wait` > 0 waits that long for the token lock; with `emit_locked_out=False` the outcomes
        of a token locked out are returned without being counted (the caller looks again later).

        A stored URL that is not canonical is isolated by the recorder: reported `invalid_url` and
        left untouched (nothing inside the pipeline fixes a URL; marking it would hide our bug behind
        a FetchStatus), so the token's other URLs still proceed.
        """
        address = _check_address(address)
        urls = list(dict.fromkeys(urls))
        started = time.monotonic()

        def skipped(url: str, status: EngineOutcome, detail: str, count: bool = True) -> UrlOutcome:
            outcome = UrlOutcome(address, url, (p.value if (p := _platform_or_none(url)) else None),
                                 status, False, False, 0.0, (time.monotonic() - started) * 1000.0, detail)
            return emit(run, outcome) if count else outcome

        outcomes: list[UrlOutcome] | None = None
        try:
            with self._token_lock(address, lock_wait) as lease:
                if not lease.held:
                    outcomes = [skipped(url, EngineOutcome.LOCKED_OUT, _held_elsewhere(lock_wait), emit_locked_out)
                                for url in urls if not stop()]
                else:
                    doc = self._store.find_token(address)
                    present = [url for url in urls if doc is not None and doc.element(url) is not None]
                    missing = {url: skipped(url, EngineOutcome.NO_ELEMENT, "no such token url in the store")
                               for url in urls if url not in present}
                    recorded = (
                        {o.url: o for o in self.record_targets(doc, present, run, stop, selected)} if doc else {}
                    )
                    outcomes = [o for url in urls if (o := missing.get(url) or recorded.get(url)) is not None]
        except Exception as exc:
            if outcomes is not None:  # only the release failed; the key expires by its TTL
                log.warning(kv(event="token_lock_release_failed", token=address, error=type(exc).__name__))
                return outcomes
            log.error(kv(event="url_failed", token=address, urls=len(urls), error=type(exc).__name__),
                      exc_info=True)
            return [skipped(url, EngineOutcome.FAILED, describe_error(exc)) for url in urls]
        return outcomes

    def resolve_unresolved(self, address: str, value: UnresolvedValue, run: RunState | None = None) -> str:
        """Try again to resolve a raw value kept on the token. Returns what happened, one of
        "resolved" (its canonical URL joined the token and was recorded), "retrying" (still failing
        transiently; attempts counted), "dropped" (failed for good, or out of attempts; logged with
        the reason), "locked_out", "lost"."""
        run = run if run is not None else self.new_run()
        now = self._clock()
        with self._locks.try_hold(TOKEN_LOCK_PREFIX + address, self._token_lock_ttl) as lease:
            if not lease.held:
                return "locked_out"
            try:
                url = self._profiles.resolve_value(value.field, value.value)
            except UnresolvedValueError as exc:
                attempts = value.attempts + 1
                if attempts >= self._recorder.max_attempts:
                    log.warning(kv(event="unresolved_dropped", token=address, field=value.field,
                                   reason=f"still failing after {attempts} attempts: {exc}"))
                    result = self._store.update_unresolved(address, value, lease.fence, drop=True)
                    return "dropped" if result.applied else "lost"
                kept = value.model_copy(update={"attempts": attempts, "reason": str(exc)[:400], "checked_at": now})
                result = self._store.update_unresolved(address, kept, lease.fence)
                return "retrying" if result.applied else "lost"
            except DroppedValue as exc:
                log.warning(kv(event="unresolved_dropped", token=address, field=value.field, reason=str(exc)))
                result = self._store.update_unresolved(address, value, lease.fence, drop=True)
                return "dropped" if result.applied else "lost"
            if not self._store.add_resolved_url(address, value.field, url, lease.fence, now).applied:
                return "lost"
            log.info(kv(event="unresolved_resolved", token=address, field=value.field, url=safe_url(url)))
            doc = self._store.find_token(address)
            if doc is not None and doc.element(url) is not None:
                self._record_url_isolated(doc, url, run)
            return "resolved"
