"""`record_url`: the unit of work every path shares, inside the URL lock (docs/architecture.md,
"Recording one URL"). Only one URL lock is held at a time, so no deadlock is possible; the lock's
fencing token travels with the write."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from social_recording.domain.bounds import above, at_least
from social_recording.domain.models import TokenDoc, utcnow
from social_recording.domain.policy import DEFAULT_BACKOFF, DEFAULT_MAX_ATTEMPTS, Backoff
from social_recording.domain.url_machine import Selected
from social_recording.domain.urls import parse_canonical
from social_recording.locks.base import LockBackendUnavailable, LockManager
from social_recording.locks.spend_budget import SpendBudgets
from social_recording.platforms.base import GeneratorRegistry
from social_recording.recording._text import describe_error, kv, safe_url
from social_recording.recording.answer_spool import AnswerSpool
from social_recording.recording.attempt import RecorderSwitches, UrlAttempt
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.recording.run_state import RunState
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")

URL_LOCK_TTL_S = 180.0
"""Worst single provider call (~105 s) plus fan-out and writes; the lease is renewed while held, so
this only bounds how long a crashed holder blocks the URL."""
URL_LOCK_WAIT_S = 180.0
"""Equal to the TTL: a live holder finishes within it, a dead one expires within it."""

URL_LOCK_PREFIX = "social-url:"

TokenRef = TokenDoc | tuple[str, str | None]
"""A token as the caller knows it: its stored document (the elements as read), or (address, symbol)."""


def emit(run: RunState, outcome: UrlOutcome) -> UrlOutcome:
    """Count `outcome` in the run and log its one structured line."""
    run.note(outcome)
    failed = outcome.status in (EngineOutcome.FAILED, EngineOutcome.INVALID_URL)
    level = logging.WARNING if failed else logging.INFO
    if not log.isEnabledFor(level):  # the line is built only when someone reads it
        return outcome
    log.log(
        level,
        kv(
            event="url_recorded",
            token=outcome.token,
            url=safe_url(outcome.url),
            platform=outcome.platform,
            status=str(outcome.status),
            attempted=outcome.attempted,
            reused=outcome.reused,
            waited_ms=round(outcome.waited_ms),
            took_ms=round(outcome.took_ms),
            detail=outcome.detail,
        ),
    )
    return outcome


class UrlRecorder:
    """Records one URL of one token. Thread-safe if its store and lock manager are.

    `url_lock_wait` / `url_lock_ttl` are parameters so fault tests can run them in seconds;
    production uses the constants.
    """

    def __init__(
        self,
        store: Store,
        locks: LockManager,
        writer: GraphWriter,
        registry: GeneratorRegistry,
        *,
        enable_paid: bool,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        url_lock_wait: float = URL_LOCK_WAIT_S,
        url_lock_ttl: float = URL_LOCK_TTL_S,
        clock: Callable[[], datetime] = utcnow,
        spool: AnswerSpool | None = None,
        spend_budgets: SpendBudgets | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
    ) -> None:
        self._store = store
        self._locks = locks
        self._writer = writer
        self._registry = registry
        self._settings = RecorderSwitches(enable_paid=enable_paid, max_attempts=at_least("max_attempts", max_attempts, 1),
                                          budgets=spend_budgets, backoff=backoff)
        self._url_lock_wait = at_least("url_lock_wait", url_lock_wait, 0, "seconds")
        self._url_lock_ttl = above("url_lock_ttl", url_lock_ttl, 0, "seconds")
        self._clock = clock
        self._spool = spool

    @property
    def store(self) -> Store:
        return self._store

    @property
    def registry(self) -> GeneratorRegistry:
        return self._registry

    @property
    def enable_paid(self) -> bool:
        return self._settings.enable_paid

    @property
    def max_attempts(self) -> int:
        return self._settings.max_attempts

    @property
    def now(self) -> datetime:
        return self._clock()

    def record_url(self, token: TokenRef, url: str, run: RunState, selected: Selected | None = None) -> UrlOutcome:
        """Record `url` for `token`; never raises for one URL's trouble — the outcome says what
        happened, and one line is logged. `selected` is the element as the run selected it (default:
        as the token's document holds it); if it changed before the lock was taken, it is left."""
        started = time.monotonic()
        if isinstance(token, TokenDoc):
            address, symbol = token.address, token.symbol
            if selected is None and (el := token.element(url)) is not None:
                selected = Selected(el.status, el.checked_at)
        else:
            address, symbol = token

        def bare(status: EngineOutcome, detail: str, platform: str | None, waited_ms: float = 0.0) -> UrlOutcome:
            return emit(run, UrlOutcome(address, url, platform, status, False, False, waited_ms,
                                        (time.monotonic() - started) * 1000.0, detail))

        # Nothing inside the pipeline fixes a URL: a stored non-canonical one is our bug, reported and
        # left untouched, never used as a lock key or sent to a provider.
        try:
            platform = parse_canonical(url).platform
        except ValueError as exc:
            return bare(EngineOutcome.INVALID_URL, f"stored url is not canonical ({type(exc).__name__}); left untouched",
                        None)

        lock_cm = self._locks.hold_within(URL_LOCK_PREFIX + url, self._url_lock_ttl, self._url_lock_wait)
        waited_ms = 0.0
        outcome: UrlOutcome | None = None
        try:
            with lock_cm as lease:
                waited_ms = lease.waited_ms
                if not lease.held:
                    outcome = bare(EngineOutcome.LOCKED,
                                   f"url lock wait of {self._url_lock_wait:g}s exceeded; left for the next run",
                                   platform.value, waited_ms)
                else:
                    attempt = UrlAttempt(
                        store=self._store, writer=self._writer, registry=self._registry,
                        settings=self._settings, address=address, symbol=symbol, url=url, platform=platform,
                        selected=selected, lease=lease, run=run, now=self._clock(), started=started,
                        spool=self._spool, clock=self._clock,
                    )
                    outcome = emit(run, attempt.run())
        except LockBackendUnavailable as exc:
            if outcome is not None:  # only the release: it is logged, the key expires by its TTL
                return outcome
            # The lock server stayed away past the outage bound: nothing was sent, nothing learned.
            return bare(EngineOutcome.DEFERRED, f"{exc}; left as it was", platform.value, waited_ms)
        except Exception as exc:  # a lock or store backend failed, or a bug of ours: isolate this URL
            if outcome is not None:
                # Only the release failed, after the work was recorded: the key expires by its TTL.
                log.warning(kv(event="url_lock_release_failed", url=safe_url(url), error=type(exc).__name__))
                return outcome
            log.error(
                kv(event="url_failed", token=address, url=safe_url(url), error=type(exc).__name__), exc_info=True
            )
            return bare(EngineOutcome.FAILED, describe_error(exc), platform.value, waited_ms)
        return outcome
