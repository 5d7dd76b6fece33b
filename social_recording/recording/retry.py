"""Retry: re-attempt URLs that have not converged (DESIGN §7, seed 004 §6.2, seed 000 L-9).

The URL axis: candidates come from our own documents (zero upstream calls), are flattened to
(token, url), filtered by the shared back-off (never-attempted URLs always pass), cut to `limit`
URLs, and each goes through `record_one_url` (token lock, URL lock, gate inside the lock).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from social_recording.domain.models import SocialUrl, utcnow
from social_recording.domain.policy import backoff_passed
from social_recording.domain.status import ABSORBING, RETRYABLE, FetchStatus, parse_status
from social_recording.locks.base import LockManager
from social_recording.recording._pool import (
    ALREADY_RUNNING,
    JOB_LOCK_TTL_S,
    STOPPED_BY_DEADLINE,
    STOPPED_BY_DRAINED,
    STOPPED_BY_LIMIT,
    STOPPED_BY_LOCK_LOST,
    check_deadline,
    check_limit,
    check_max_workers,
    run_bounded,
)
from social_recording.recording._text import describe_error, kv
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.url_recorder import EngineOutcome, RunState, UrlOutcome, emit
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")

RETRY_LOCK_KEY = "social-reconcile:retry"
DEFAULT_LIMIT = 50
DEFAULT_MIN_INTERVAL_MINUTES = 60


def parse_retry_statuses(statuses: Collection[FetchStatus | str]) -> frozenset[FetchStatus]:
    """Validate a retry's `statuses` (names or FetchStatus). `ok` is rejected: re-opening a success
    breaks convergence (seed 004 §2.2, 422 STATUS_NOT_RETRYABLE); unknown names are rejected too."""
    if isinstance(statuses, str) or not isinstance(statuses, Collection):
        raise ValueError(f"statuses must be a list of status names, got {statuses!r}")
    parsed = set()
    for s in statuses:
        if not isinstance(s, str):
            raise ValueError(f"statuses must be status names, got {s!r}")
        parsed.add(parse_status(s))
    if not parsed:
        raise ValueError("statuses must name at least one status; the default is the retryable set")
    if FetchStatus.OK in parsed:
        raise ValueError(
            "statuses must not contain 'ok': ok is absorbing and never re-opened (seed 004 §2.2); "
            f"got {sorted(str(s) for s in parsed)}"
        )
    return frozenset(parsed)


def _check_addresses(token_addresses: Sequence[str] | None) -> list[str] | None:
    """None or an empty list both mean "every token" (an empty config list is the natural "unset")."""
    if token_addresses is None:
        return None
    if isinstance(token_addresses, str) or not isinstance(token_addresses, Sequence):
        raise ValueError(f"token_addresses must be a list of addresses or None, got {token_addresses!r}")
    for a in token_addresses:
        if not isinstance(a, str) or not a.strip():
            raise ValueError(f"token_addresses must hold non-empty strings, got {a!r}")
    return list(dict.fromkeys(token_addresses)) or None


@dataclass(frozen=True)
class RetryOutcome:
    statuses: tuple[str, ...]
    skipped: str | None = None
    """"already running" when another retry run holds the job lock (not an error)."""
    candidate_urls: int = 0
    skipped_by_interval: int = 0
    processed: int = 0
    """URLs handed to `record_one_url`."""
    converged: int = 0
    """Processed URLs whose status changed to an absorbing one (ok, not_found, blocked, invalid,
    exhausted). Staying 0 run after run is the sign retry spins uselessly (seed 004 §2.2)."""
    locked_out: int = 0
    remaining: int = 0
    """Eligible URLs (past back-off) not processed in this run: cut by limit or deadline."""
    stopped_by: str | None = None
    url_outcomes: tuple[UrlOutcome, ...] = ()
    status_counts: dict[str, int] = field(default_factory=dict)

    def metadata(self) -> dict[str, object]:
        return {
            "statuses": ",".join(self.statuses),
            "skipped": self.skipped or "",
            "candidate_urls": self.candidate_urls,
            "skipped_by_interval": self.skipped_by_interval,
            "processed": self.processed,
            "converged": self.converged,
            "locked_out": self.locked_out,
            "remaining": self.remaining,
            "stopped_by": self.stopped_by or "",
            **{f"urls_{k}": v for k, v in sorted(self.status_counts.items())},
        }


class RetryService:
    def __init__(
        self,
        store: Store,
        locks: LockManager,
        processor: TokenProcessor,
        *,
        clock: Callable[[], datetime] = utcnow,
        job_lock_ttl: float = JOB_LOCK_TTL_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._locks = locks
        self._processor = processor
        self._clock = clock
        self._job_lock_ttl = job_lock_ttl
        self._monotonic = monotonic

    def retry(
        self,
        statuses: Collection[FetchStatus | str] = RETRYABLE,
        token_addresses: Sequence[str] | None = None,
        limit: int = DEFAULT_LIMIT,
        min_interval_minutes: int = DEFAULT_MIN_INTERVAL_MINUTES,
        deadline_seconds: float | None = None,
        max_workers: int = 4,
        *,
        run: RunState | None = None,
    ) -> RetryOutcome:
        """Re-attempt up to `limit` non-converged URLs. All arguments are validated before anything runs."""
        entered = self._monotonic()
        wanted = parse_retry_statuses(statuses)
        addresses = _check_addresses(token_addresses)
        checked_limit = check_limit(limit, allow_none=False)
        assert checked_limit is not None
        if (
            not isinstance(min_interval_minutes, int)
            or isinstance(min_interval_minutes, bool)
            or min_interval_minutes < 0
        ):
            raise ValueError(f"min_interval_minutes must be an integer >= 0, got {min_interval_minutes!r}")
        deadline = check_deadline(deadline_seconds)
        max_workers = check_max_workers(max_workers)
        run = run if run is not None else RunState()
        names = tuple(sorted(s.value for s in wanted))

        with self._locks.try_hold(RETRY_LOCK_KEY, self._job_lock_ttl) as job:
            if not job.held:
                log.info(kv(event="retry_skipped", reason=ALREADY_RUNNING))
                return RetryOutcome(names, skipped=ALREADY_RUNNING)

            now = self._clock()
            interval = timedelta(minutes=min_interval_minutes)
            docs = self._store.find_tokens_by_url_statuses(wanted, addresses)
            candidates: list[tuple[str, SocialUrl]] = [
                (doc.address, el) for doc in docs for el in doc.social_urls if el.status in wanted
            ]
            eligible = [(a, el) for a, el in candidates if backoff_passed(el.attempted_at, now, interval)]
            selected = eligible[:checked_limit]
            by_token: dict[str, list[SocialUrl]] = {}
            for a, el in selected:
                by_token.setdefault(a, []).append(el)
            units = list(by_token.items())

            def deadline_reached() -> bool:
                return deadline is not None and self._monotonic() - entered >= deadline

            def work(unit: tuple[str, list[SocialUrl]]) -> list[UrlOutcome]:
                address, elements = unit
                out: list[UrlOutcome] = []
                for el in elements:  # one token's URLs sequentially (seed 000 §1.3)
                    if deadline_reached() or job.lost:
                        break
                    out.append(self._processor.record_one_url(address, el.url, run))
                return out

            def on_error(unit: tuple[str, list[SocialUrl]], exc: Exception) -> list[UrlOutcome]:
                address, elements = unit
                return [
                    emit(run, UrlOutcome(address, el.url, None, EngineOutcome.FAILED, False, False, 0.0, 0.0,
                                         describe_error(exc)))
                    for el in elements
                ]

            pool = run_bounded(
                units,
                work,
                on_error,
                max_workers=max_workers,
                limit=None,
                deadline_reached=deadline_reached,
                lock_lost=lambda: job.lost,
            )
            lost = job.lost

        outcomes = tuple(u for batch in pool.results for u in batch)
        processed = len(outcomes)
        cut_in_run = len(selected) - processed
        if pool.stopped_by == STOPPED_BY_LOCK_LOST or (lost and cut_in_run):
            stopped_by = STOPPED_BY_LOCK_LOST
        elif cut_in_run:
            stopped_by = STOPPED_BY_DEADLINE
        elif len(eligible) > len(selected):
            stopped_by = STOPPED_BY_LIMIT
        else:
            stopped_by = STOPPED_BY_DRAINED
        outcome = RetryOutcome(
            names,
            candidate_urls=len(candidates),
            skipped_by_interval=len(candidates) - len(eligible),
            processed=processed,
            converged=sum(
                1
                for u in outcomes
                if isinstance(u.status, FetchStatus) and u.status in ABSORBING and u.status != u.previous
            ),
            locked_out=sum(1 for u in outcomes if u.status == EngineOutcome.LOCKED_OUT),
            remaining=len(eligible) - processed,
            stopped_by=stopped_by,
            url_outcomes=outcomes,
            status_counts=dict(Counter(str(u.status) for u in outcomes)),
        )
        log.info(kv(event="retry_done", **{k: v for k, v in outcome.metadata().items() if not k.startswith("urls_")}))
        return outcome
