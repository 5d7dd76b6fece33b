"""Recording a token (DESIGN §4, seed 000): `record` (live path, reconcile) and `record_one_url` (retry).

The token lock is try-once (L-1): another worker holding it is doing the same work, so waiting
would only tie up a slot (V-2). It auto-extends while held, so URL-lock waits inside it never
erode it (H-4). A new token is pre-created with every URL `pending` right after the upstream read
(L-3), then each URL is recorded and written on its own (L-4), one URL lock at a time (L-5).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from social_recording.domain.models import TokenDoc, utcnow
from social_recording.domain.policy import backoff_passed
from social_recording.domain.status import REALTIME
from social_recording.domain.urls import Platform, platform_of
from social_recording.locks.base import Lease, LockManager
from social_recording.recording._text import describe_error, kv, safe_url
from social_recording.recording.sources import ProfileSource
from social_recording.recording.url_recorder import (
    EngineOutcome,
    RunState,
    TokenRef,
    UrlOutcome,
    UrlRecorder,
    emit,
)
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")

TOKEN_LOCK_TTL_S = 60.0
"""Only the auto-extension interval basis and how long a crashed holder blocks the token (L-1)."""
TOKEN_LOCK_PREFIX = "social-record:"
DEFAULT_MIN_INTERVAL = timedelta(minutes=60)
"""The shared back-off (L-9, seed 004 §2.2): the live path uses the retry job's interval."""


class TokenStatus(StrEnum):
    RECORDED = "recorded"
    """Targets were handed to the URL recorder; see the per-URL outcomes."""
    UP_TO_DATE = "up_to_date"
    """The token is stored and no REALTIME URL is past its back-off: nothing to do (L-8, V-5, V-6)."""
    LOCKED_OUT = "locked_out"
    """Another worker holds the token lock: returned at once (L-1, V-2)."""
    NO_PROFILE = "no_profile"
    """Upstream has no usable profile (e.g. no image): nothing written (seed 000 §1.4)."""
    LOST = "lost"
    """The token lease was lost between URLs: stopped; the remaining URLs stay for the next run."""
    FAILED = "failed"
    """The upstream read or a backend failed before any URL was recorded."""


@dataclass(frozen=True)
class TokenOutcome:
    address: str
    status: TokenStatus
    urls: tuple[UrlOutcome, ...] = ()
    created: bool = False
    detail: str = ""
    took_ms: float = 0.0
    dropped: tuple[str, ...] = ()
    """Tracker values the profile reader refused ("field='value': reason"), for run metadata."""


def _check_address(address: object) -> str:
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"token address must be a non-empty string, got {address!r}")
    return address


def _platform_or_none(url: str) -> Platform | None:
    try:
        return platform_of(url)
    except Exception:
        return None


class TokenProcessor:
    def __init__(
        self,
        store: Store,
        locks: LockManager,
        profiles: ProfileSource,
        recorder: UrlRecorder,
        *,
        token_lock_ttl: float = TOKEN_LOCK_TTL_S,
        min_interval: timedelta = DEFAULT_MIN_INTERVAL,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        if not token_lock_ttl > 0:
            raise ValueError(f"token_lock_ttl must be > 0 seconds, got {token_lock_ttl!r}")
        if min_interval < timedelta(0):
            raise ValueError(f"min_interval must be >= 0, got {min_interval!r}")
        self._store = store
        self._locks = locks
        self._profiles = profiles
        self._recorder = recorder
        self._token_lock_ttl = token_lock_ttl
        self._min_interval = min_interval
        self._clock = clock

    @property
    def store(self) -> Store:
        return self._store

    @property
    def locks(self) -> LockManager:
        return self._locks

    # ------------------------------------------------------------------ live path and reconcile
    def record(self, address: str, symbol: str | None, run: RunState | None = None) -> TokenOutcome:
        """Record one token (DESIGN §4 `record`). Never raises for the token's own trouble.
        `run` shares per-run state (credit exhaustion, counters) across tokens; one per call by default."""
        address = _check_address(address)
        run = run if run is not None else RunState()
        started = time.monotonic()

        def done(status: TokenStatus, urls: list[UrlOutcome] | None = None, *, created: bool = False,
                 detail: str = "", dropped: tuple[str, ...] = ()) -> TokenOutcome:
            outcome = TokenOutcome(address, status, tuple(urls or ()), created, detail,
                                   (time.monotonic() - started) * 1000.0, dropped)
            log.log(
                logging.WARNING if status is TokenStatus.FAILED else logging.INFO,
                kv(event="token_recorded", token=address, status=status.value, created=created,
                   urls=len(outcome.urls), took_ms=round(outcome.took_ms), detail=detail),
            )
            return outcome

        outcome: TokenOutcome | None = None
        try:
            with self._locks.try_hold(TOKEN_LOCK_PREFIX + address, self._token_lock_ttl) as lease:
                if not lease.held:
                    outcome = done(TokenStatus.LOCKED_OUT, detail="token lock held by another worker")
                else:
                    outcome = self._record_held(address, symbol, lease, run, done)
        except Exception as exc:  # upstream read, store or lock backend: this token only
            if outcome is not None:  # only the release failed; the key expires by its TTL
                log.warning(kv(event="token_lock_release_failed", token=address, error=type(exc).__name__))
                return outcome
            log.warning(kv(event="token_failed", token=address, error=type(exc).__name__), exc_info=True)
            return done(TokenStatus.FAILED, detail=describe_error(exc))
        return outcome

    def _record_held(self, address: str, symbol: str | None, lease: Lease, run: RunState,
                     done: Callable[..., TokenOutcome]) -> TokenOutcome:
        doc = self._store.find_token(address)
        created = False
        dropped: tuple[str, ...] = ()
        token: TokenRef
        if doc is None:
            profile = self._profiles.read(address)  # the only upstream call (L-8: never for a stored token)
            if profile is None:
                return done(TokenStatus.NO_PROFILE,
                            detail="the tracker has no usable profile (unknown address or no image); nothing stored")
            if profile.address != address:
                return done(TokenStatus.FAILED, detail=f"profile is for another address {profile.address!r}")
            dropped = tuple(profile.dropped)
            created = self._store.create_pending_token(profile, self._clock())
            if created:
                targets = list(profile.urls)
                token = (address, profile.symbol if profile.symbol is not None else symbol)
            else:
                # Someone created it meanwhile (insert-only, L-3): continue from what is stored.
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
            return done(TokenStatus.UP_TO_DATE, created=created, detail="no REALTIME url past back-off",
                        dropped=dropped)

        outcomes: list[UrlOutcome] = []
        for url in targets:  # sequential: same-token fan-out races are on the object axis (seed 000 §1.3)
            if lease.lost:
                return done(TokenStatus.LOST, outcomes, created=created,
                            detail=f"token lock lost after {len(outcomes)} of {len(targets)} urls", dropped=dropped)
            outcomes.append(self._record_url_isolated(token, url, run))
        return done(TokenStatus.RECORDED, outcomes, created=created, dropped=dropped)

    def _realtime_targets(self, doc: TokenDoc) -> list[str]:
        """L-8 / L-15: only pending and error reopen on the live path, and error only past back-off
        (V-6); skipped_paid / unsupported wait for the retry job (V-8)."""
        now = self._clock()
        return [
            el.url
            for el in doc.social_urls
            if el.status in REALTIME and backoff_passed(el.attempted_at, now, self._min_interval)
        ]

    def _record_url_isolated(self, token: TokenRef, url: str, run: RunState) -> UrlOutcome:
        try:
            return self._recorder.record_url(token, url, run)
        except Exception as exc:  # the recorder isolates its own trouble; this is a last guard
            address = token.address if isinstance(token, TokenDoc) else token[0]
            log.warning(kv(event="url_failed", token=address, url=safe_url(url), error=type(exc).__name__),
                        exc_info=True)
            return emit(run, UrlOutcome(address, url, None, EngineOutcome.FAILED, False, False, 0.0, 0.0,
                                        describe_error(exc)))

    # ------------------------------------------------------------------ retry path
    def record_one_url(self, address: str, url: str, run: RunState | None = None) -> UrlOutcome:
        """The retry path (DESIGN §4): same try-once token lock, NO upstream call (the symbol comes from
        our document, seed 004 §3.2), then `record_url`, which routes with the URL's platform anew.

        A stored URL that is not canonical is isolated by the recorder: reported `invalid_url` and
        left untouched (nothing inside the pipeline fixes a URL, seed 003; marking it would hide our
        bug behind a FetchStatus), so the token's other URLs still proceed.
        """
        address = _check_address(address)
        run = run if run is not None else RunState()
        started = time.monotonic()

        def skipped(status: EngineOutcome, detail: str) -> UrlOutcome:
            return emit(run, UrlOutcome(address, url, (p.value if (p := _platform_or_none(url)) else None),
                                        status, False, False, 0.0, (time.monotonic() - started) * 1000.0, detail))

        outcome: UrlOutcome | None = None
        try:
            with self._locks.try_hold(TOKEN_LOCK_PREFIX + address, self._token_lock_ttl) as lease:
                if not lease.held:
                    outcome = skipped(EngineOutcome.LOCKED_OUT, "token lock held by another worker")
                else:
                    doc = self._store.find_token(address)
                    if doc is None or doc.element(url) is None:
                        outcome = skipped(EngineOutcome.NO_ELEMENT, "no such token url in the store")
                    else:
                        outcome = self._record_url_isolated(doc, url, run)
        except Exception as exc:
            if outcome is not None:  # only the release failed; the key expires by its TTL
                log.warning(kv(event="token_lock_release_failed", token=address, error=type(exc).__name__))
                return outcome
            log.warning(kv(event="url_failed", token=address, url=safe_url(url), error=type(exc).__name__),
                        exc_info=True)
            return skipped(EngineOutcome.FAILED, describe_error(exc))
        return outcome
