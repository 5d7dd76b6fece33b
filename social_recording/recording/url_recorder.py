"""`record_url`: the unit of work every path shares (DESIGN §4, seed 000 L-2, L-4, L-6, L-9, L-10).

    with url_lock(url, wait<=180 s, ttl 180 s, auto-extended):          L-2
        not held -> leave the element as it is, attempts unchanged         L-10
        hit = gate.lookup(url)          inside the lock                    L-6
        hit  -> writer.link_existing    status = hit.status, attempted False
        miss -> generator.generate -> writer.write
        final = resolve_final_status(current element, status, attempted)   L-9
        store.record_url_result(...)    one partial update                 L-4

Judge, call and write all happen inside the lock; only one URL lock is held at a time (L-5), so
no deadlock is possible. Before every write the lease's `lost` flag is checked (H-5): a holder
whose lock expired stops without writing and leaves the element for the next run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from social_recording.domain.graph import SocialContractError
from social_recording.domain.models import SocialUrl, TokenDoc, utcnow
from social_recording.domain.policy import DEFAULT_MAX_ATTEMPTS, resolve_final_status
from social_recording.domain.status import ABSORBING, RETRYABLE, FetchStatus
from social_recording.domain.urls import Platform, parse_canonical
from social_recording.locks.base import Lease, LockManager
from social_recording.platforms.base import (
    PROVIDER_OF,
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GeneratorRegistry,
)
from social_recording.recording._text import describe_error, kv, safe_url
from social_recording.recording.gate import DedupeGate
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")

URL_LOCK_TTL_S = 180.0
"""Worst single provider call (~105 s) plus fan-out and writes; only matters after a crash (seed 000 §6.2)."""
URL_LOCK_WAIT_S = 180.0
"""Equal to the TTL: a live holder finishes within it, a dead one expires within it (seed 000 §6.2, L-11)."""

URL_LOCK_PREFIX = "social-url:"


class EngineOutcome(StrEnum):
    """Outcomes of one URL that are not a stored FetchStatus: nothing was written for the element."""

    LOCKED = "locked"
    """The URL lock wait ran out: the element is left as it was, attempts unchanged (L-10)."""
    LOST = "lost"
    """A lease was lost before a write: the holder stopped; the next run completes the URL (H-5)."""
    LOCKED_OUT = "locked_out"
    """The token lock is held elsewhere (retry path, seed 004 §6.3): skipped, picked up next cycle."""
    INVALID_URL = "invalid_url"
    """The stored URL is not canonical (our bug upstream of the reader): isolated, element untouched."""
    NO_ELEMENT = "no_element"
    """The token or its element for this URL is not in the store: there is nothing to record against."""
    FAILED = "failed"
    """An unexpected error in our own code or a backend (store, lock): nothing more was written."""


OutcomeStatus = FetchStatus | EngineOutcome


@dataclass(frozen=True)
class UrlOutcome:
    """What happened to one URL of one token. `status` is the stored final FetchStatus when something
    was recorded, else an EngineOutcome. `detail` is a short reason, never a secret."""

    token: str
    url: str
    platform: str | None
    status: OutcomeStatus
    attempted: bool
    reused: bool
    waited_ms: float
    took_ms: float
    detail: str = ""
    previous: FetchStatus | None = None
    """The element's status read inside the lock before this invocation (None when not read)."""

    @property
    def recorded(self) -> bool:
        """True when the element's status was written (or already final and deliberately left)."""
        return isinstance(self.status, FetchStatus)

    def as_row(self) -> dict[str, object]:
        """A flat row for run metadata tables (the URL is made log-safe)."""
        return {
            "token": self.token,
            "url": safe_url(self.url),
            "platform": self.platform or "",
            "status": str(self.status),
            "attempted": self.attempted,
            "reused": self.reused,
            "waited_ms": round(self.waited_ms, 1),
            "took_ms": round(self.took_ms, 1),
            "detail": self.detail,
        }


class RunState:
    """Per-run state shared by every URL of one run / op (thread-safe).

    `credit_exhausted` is run-scoped on purpose (seed 004 §5.5): once a provider says the credit is
    gone, the rest of this run's paid URLs become skipped_paid without calls; a process-wide switch
    would have no way back.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._credit_exhausted = False
        self._exhausted_providers: set[str] = set()
        self._statuses: Counter[str] = Counter()
        self._attempted = 0
        self._reused = 0

    @property
    def credit_exhausted(self) -> bool:
        with self._lock:
            return self._credit_exhausted

    @credit_exhausted.setter
    def credit_exhausted(self, value: bool) -> None:
        with self._lock:
            self._credit_exhausted = bool(value)

    def mark_exhausted(self, provider: str, *, paid: bool) -> None:
        """A provider said its credit / quota is gone. A paid one stops every paid call of this run
        (seed 004 §5.5); a free one (YouTube quota) stops only further calls to itself."""
        with self._lock:
            self._exhausted_providers.add(provider)
            if paid:
                self._credit_exhausted = True

    def provider_exhausted(self, provider: str) -> bool:
        with self._lock:
            return provider in self._exhausted_providers

    def note(self, outcome: UrlOutcome) -> None:
        with self._lock:
            self._statuses[str(outcome.status)] += 1
            self._attempted += int(outcome.attempted)
            self._reused += int(outcome.reused)

    def status_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._statuses)

    @property
    def attempted(self) -> int:
        with self._lock:
            return self._attempted

    @property
    def reused(self) -> int:
        with self._lock:
            return self._reused


TokenRef = TokenDoc | tuple[str, str | None]


def emit(run: RunState, outcome: UrlOutcome) -> UrlOutcome:
    """Count `outcome` in the run and log its one structured line (DESIGN §7 "Run logs")."""
    run.note(outcome)
    failed = outcome.status in (EngineOutcome.FAILED, EngineOutcome.INVALID_URL)
    log.log(
        logging.WARNING if failed else logging.INFO,
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


class _LeaseLost(Exception):
    """Internal: the URL lease was lost at a write checkpoint (`attempted`: a call was already made)."""

    def __init__(self, attempted: bool = False) -> None:
        super().__init__("url lease lost")
        self.attempted = attempted


@contextmanager
def _no_lock(key: str) -> Iterator[Lease]:
    yield Lease(key, "benchmark-no-lock", held=True)


class UrlRecorder:
    """Records one URL of one token. Thread-safe if its store and lock manager are.

    `url_lock_wait` is a parameter only so tests can exceed it quickly (V-4); production uses the
    constant. `_unsafe_no_dedupe_no_lock` exists ONLY for `bench/engine_calls.py`: it skips the URL
    lock and the dedupe gate to measure what they save. Never set it anywhere else — without them
    every token pays for every URL again (seed 000 H-1).
    """

    def __init__(
        self,
        store: Store,
        locks: LockManager,
        gate: DedupeGate,
        writer: GraphWriter,
        registry: GeneratorRegistry,
        *,
        enable_paid: bool,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        url_lock_wait: float = URL_LOCK_WAIT_S,
        url_lock_ttl: float = URL_LOCK_TTL_S,
        clock: Callable[[], datetime] = utcnow,
        _unsafe_no_dedupe_no_lock: bool = False,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts!r}")
        if not url_lock_ttl > 0:
            raise ValueError(f"url_lock_ttl must be > 0 seconds, got {url_lock_ttl!r}")
        if not url_lock_wait >= 0:
            raise ValueError(f"url_lock_wait must be >= 0 seconds, got {url_lock_wait!r}")
        self._store = store
        self._locks = locks
        self._gate = gate
        self._writer = writer
        self._registry = registry
        self._enable_paid = enable_paid
        self._max_attempts = max_attempts
        self._url_lock_wait = url_lock_wait
        self._url_lock_ttl = url_lock_ttl
        self._clock = clock
        self._unsafe = _unsafe_no_dedupe_no_lock

    @property
    def store(self) -> Store:
        return self._store

    def record_url(self, token: TokenRef, url: str, run: RunState) -> UrlOutcome:
        """Record `url` for `token` (a TokenDoc snapshot or `(address, symbol)`); never raises for
        one URL's trouble — the outcome says what happened, and one line is logged."""
        started = time.monotonic()
        if isinstance(token, TokenDoc):
            address, symbol, snapshot = token.address, token.symbol, token.element(url)
        else:
            (address, symbol), snapshot = token, None

        def finish(
            status: OutcomeStatus,
            *,
            platform: Platform | None,
            attempted: bool = False,
            reused: bool = False,
            waited_ms: float = 0.0,
            detail: str = "",
            previous: FetchStatus | None = None,
        ) -> UrlOutcome:
            return emit(
                run,
                UrlOutcome(
                    token=address,
                    url=url,
                    platform=platform.value if platform is not None else None,
                    status=status,
                    attempted=attempted,
                    reused=reused,
                    waited_ms=waited_ms,
                    took_ms=(time.monotonic() - started) * 1000.0,
                    detail=detail,
                    previous=previous,
                ),
            )

        # Nothing inside the pipeline fixes a URL (seed 003): a stored non-canonical one is our bug,
        # reported and left untouched, never used as a lock key or sent to a provider.
        try:
            platform = parse_canonical(url).platform
        except ValueError as exc:
            return finish(
                EngineOutcome.INVALID_URL,
                platform=None,
                detail=f"stored url is not canonical ({type(exc).__name__}); left untouched",
            )

        key = URL_LOCK_PREFIX + url
        lock_cm: AbstractContextManager[Lease] = (
            _no_lock(key) if self._unsafe else self._locks.hold_within(key, self._url_lock_ttl, self._url_lock_wait)
        )
        waited_ms = 0.0
        outcome: UrlOutcome | None = None
        try:
            with lock_cm as lease:
                waited_ms = lease.waited_ms
                if not lease.held:
                    outcome = finish(
                        EngineOutcome.LOCKED,
                        platform=platform,
                        waited_ms=waited_ms,
                        detail=f"url lock wait of {self._url_lock_wait:g}s exceeded; left for the next run",
                    )
                else:
                    outcome = self._record_held(address, symbol, snapshot, url, platform, lease, run, finish)
        except Exception as exc:  # a lock or store backend failed, or a bug of ours: isolate this URL
            if outcome is not None:
                # Only the release failed, after the work was recorded: the key expires by its TTL.
                log.warning(kv(event="url_lock_release_failed", url=safe_url(url), error=type(exc).__name__))
                return outcome
            log.warning(
                kv(event="url_failed", token=address, url=safe_url(url), error=type(exc).__name__), exc_info=True
            )
            return finish(EngineOutcome.FAILED, platform=platform, waited_ms=waited_ms, detail=describe_error(exc))
        return outcome

    def _record_held(
        self,
        address: str,
        symbol: str | None,
        snapshot: SocialUrl | None,
        url: str,
        platform: Platform,
        lease: Lease,
        run: RunState,
        finish: Callable[..., UrlOutcome],
    ) -> UrlOutcome:
        now = self._clock()
        waited_ms = lease.waited_ms
        # Re-read inside the lock: the caller's snapshot may be stale (attempts decide `exhausted`).
        doc = self._store.find_token(address)
        current = doc.element(url) if doc is not None else None
        if doc is None or current is None:
            return finish(
                EngineOutcome.NO_ELEMENT, platform=platform, waited_ms=waited_ms, detail="no such token url in the store"
            )
        previous = current.status
        if current.status is FetchStatus.OK:
            # ok is absorbing and never re-entered (seed 004 §0.1): never pay for it again.
            return finish(FetchStatus.OK, platform=platform, waited_ms=waited_ms, detail="already ok", previous=previous)
        if snapshot is not None and snapshot != current:
            # Someone recorded this element after the caller read it (e.g. a worker whose token lock
            # had expired): its result stands; a finished URL is not called again (V-3).
            return finish(
                current.status,
                platform=platform,
                waited_ms=waited_ms,
                detail="element changed since it was selected; left as is",
                previous=previous,
            )
        symbol = symbol if symbol is not None else doc.symbol

        def checkpoint() -> None:
            if lease.lost:
                raise _LeaseLost

        attempted = False
        reused = False
        try:
            hit = None if self._unsafe else self._gate.lookup(url, now, exclude_token=address)
            if hit is not None:
                checkpoint()
                links = self._writer.link_existing(address, url, hit.source_token, now, checkpoint=checkpoint)
                status: FetchStatus = hit.status
                reused = True
                detail = f"reused {hit.status.value} of {hit.source_token} ({len(links)} links)"
            else:
                status, attempted, detail = self._generate(address, symbol, url, platform, now, run, checkpoint)
            final = resolve_final_status(current.attempts, status, attempted, self._max_attempts)
            if not attempted and not reused and final in RETRYABLE and current.status in ABSORBING:
                # An explicit retry of not_found / blocked / invalid / exhausted that made no call
                # (paid calls off, credit or quota gone) learned nothing: the known answer stands.
                # Overwriting it with skipped_paid would lose it and make the dedupe gate pay again.
                return finish(
                    current.status,
                    platform=platform,
                    waited_ms=waited_ms,
                    detail=f"{detail}; no call made, kept {current.status.value}",
                    previous=previous,
                )
            checkpoint()
        except _LeaseLost as lost:
            return finish(
                EngineOutcome.LOST,
                platform=platform,
                attempted=attempted or lost.attempted,
                reused=reused,
                waited_ms=waited_ms,
                detail=f"url lock lost before a write: {lease.lost_reason or 'unknown'}",
                previous=previous,
            )
        self._store.record_url_result(address, url, final, now if attempted else None)
        if final is not status:
            detail = f"{detail}; {status.value} -> {final.value} after {current.attempts + 1} attempts"
        return finish(
            final,
            platform=platform,
            attempted=attempted,
            reused=reused,
            waited_ms=waited_ms,
            detail=detail,
            previous=previous,
        )

    def _generate(
        self,
        address: str,
        symbol: str | None,
        url: str,
        platform: Platform,
        now: datetime,
        run: RunState,
        checkpoint: Callable[[], None],
    ) -> tuple[FetchStatus, bool, str]:
        """The miss path: (status, attempted, detail). Raises _LeaseLost only."""
        generator = self._registry.get(platform)
        if generator is None:
            return FetchStatus.UNSUPPORTED, False, f"no generator for {platform.value}"
        paid = self._registry.is_paid(platform)
        provider = PROVIDER_OF.get(platform, platform.value)
        if paid:
            if not self._enable_paid:
                return FetchStatus.SKIPPED_PAID, False, "paid calls are disabled"
            if run.credit_exhausted:
                return FetchStatus.SKIPPED_PAID, False, "provider credit exhausted earlier in this run"
        elif run.provider_exhausted(provider):
            # A free provider's quota is gone for this run: no call, no attempt burnt, retried later.
            return FetchStatus.ERROR, False, f"{provider} quota exhausted earlier in this run"
        checkpoint()  # never pay for a call whose result we could no longer write
        try:
            result = generator.generate(url, GenerateContext(token_address=address, token_symbol=symbol))
        except Exception as exc:
            # `attempted` as the error reports it; an error without the attribute counts as attempted:
            # over-counting costs one attempt of back-off, under-counting could re-pay a paid call.
            attempted = bool(getattr(exc, "attempted", True))
            return self._status_of(exc, run, provider, paid), attempted, describe_error(exc)
        try:
            links = self._writer.write(address, url, result.graph, now, checkpoint=checkpoint)
        except _LeaseLost:
            raise _LeaseLost(attempted=result.attempted) from None
        except Exception as exc:
            # After generate() returned, whether a call was made is what the result said.
            if not isinstance(exc, SocialContractError):
                log.warning(
                    kv(event="graph_write_failed", token=address, url=safe_url(url), error=type(exc).__name__),
                    exc_info=True,
                )
            return self._status_of(exc, run, provider, paid), result.attempted, describe_error(exc)
        return FetchStatus.OK, result.attempted, f"{len(links)} links"

    @staticmethod
    def _status_of(exc: Exception, run: RunState, provider: str, paid: bool) -> FetchStatus:
        """Seed 004 §5.5. SocialContractError first: it must never collapse into error (§3.3)."""
        if isinstance(exc, SocialContractError):
            return FetchStatus.INVALID
        if isinstance(exc, ExternalFetchError):
            if exc.code == ErrorCode.TARGET_BLOCKED:
                return FetchStatus.BLOCKED
            if exc.code == ErrorCode.NOT_FOUND:
                return FetchStatus.NOT_FOUND
            if exc.code == ErrorCode.CREDIT_EXHAUSTED:
                run.mark_exhausted(provider, paid=paid)
        return FetchStatus.ERROR
