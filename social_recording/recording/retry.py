"""Retry: re-attempt URLs that have not converged, fairly and finitely (docs/architecture.md, "Retry").

The URL axis: the candidates come from our own store (zero upstream calls) through the one selection
shared with the sensor (`candidates.py`: oldest first, back-off and limit in the database), and each
goes through `record_one_url` (token lock, URL lock, gate inside the lock). The holders of one URL
selected together cost one call: the first records the answer, the others adopt it in the same run.
Raw values whose shortlink failed transiently are resolved again here too.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from social_recording.domain.models import utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL_MINUTES
from social_recording.domain.status import FetchStatus
from social_recording.locks.base import LockManager
from social_recording.recording._text import describe_error, kv
from social_recording.recording.candidates import DEFAULT_LIMIT, retry_query, select
from social_recording.recording.job_pool import (
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
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import emit
from social_recording.store.base import Candidate, Store

log = logging.getLogger("social_recording.recording")

RETRY_LOCK_KEY = "social-reconcile:retry"
REMAINING_PROBE = 1000
"""How far past `limit` a run looks to report `remaining` (a bound, so a huge backlog costs nothing)."""

# Kept importable from here: the retry job's public defaults.
__all__ = ["DEFAULT_LIMIT", "DEFAULT_MIN_INTERVAL_MINUTES", "RetryOutcome", "RetryService"]


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
    """Due elements this run selected (at most `limit`)."""
    processed: int = 0
    """URLs handed to `record_one_url`."""
    converged: int = 0
    """Processed URLs whose status changed to an absorbing one (ok, not_found, blocked, invalid,
    exhausted). Staying 0 run after run is the sign retry spins uselessly."""
    locked_out: int = 0
    lost: int = 0
    """URLs whose lock was no longer ours (nothing written, or written after a reported loss)."""
    engine_failures: int = 0
    remaining: int = 0
    """Due elements past this run's limit (counted up to REMAINING_PROBE)."""
    stopped_by: str | None = None
    unresolved: dict[str, int] = field(default_factory=dict)
    """Raw values tried again: resolved / retrying / dropped / locked_out / lost."""
    url_outcomes: tuple[UrlOutcome, ...] = ()
    status_counts: dict[str, int] = field(default_factory=dict)

    def metadata(self) -> dict[str, object]:
        return {
            "statuses": ",".join(self.statuses),
            "skipped": self.skipped or "",
            "candidate_urls": self.candidate_urls,
            "processed": self.processed,
            "converged": self.converged,
            "locked_out": self.locked_out,
            "lost": self.lost,
            "engine_failures": self.engine_failures,
            "remaining": self.remaining,
            "stopped_by": self.stopped_by or "",
            **{f"unresolved_{k}": v for k, v in sorted(self.unresolved.items())},
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

    def selection(
        self,
        *,
        statuses: Collection[FetchStatus | str] | None,
        token_addresses: Sequence[str] | None,
        limit: int,
        min_interval_minutes: int,
        now: datetime,
    ) -> tuple[list[Candidate], int]:
        """(candidates to process, due elements past the limit) — the same selection the sensor uses."""
        recorder = self._processor.recorder
        query = retry_query(
            now=now,
            min_interval=timedelta(minutes=min_interval_minutes),
            limit=limit + REMAINING_PROBE,
            statuses=statuses,
            addresses=token_addresses,
            enable_paid=recorder.enable_paid,
            usable_platforms=recorder.registry.usable_platforms(),
        )
        found = list(select(self._store, query).candidates)
        return found[:limit], len(found) - min(len(found), limit)

    def retry(
        self,
        statuses: Collection[FetchStatus | str] | None = None,
        token_addresses: Sequence[str] | None = None,
        limit: int = DEFAULT_LIMIT,
        min_interval_minutes: int = DEFAULT_MIN_INTERVAL_MINUTES,
        deadline_seconds: float | None = None,
        max_workers: int = 4,
        *,
        run: RunState | None = None,
    ) -> RetryOutcome:
        """Re-attempt up to `limit` due URLs. `statuses=None` is the default selection (only what can
        change under this configuration). Arguments are validated before anything runs."""
        entered = self._monotonic()
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
        interval = timedelta(minutes=min_interval_minutes)
        run = run if run is not None else RunState(interval)
        now = self._clock()
        probe = retry_query(now=now, min_interval=interval, statuses=statuses, addresses=addresses,
                            enable_paid=self._processor.recorder.enable_paid,
                            usable_platforms=self._processor.recorder.registry.usable_platforms())
        names = tuple(sorted(s.value for s in probe.statuses))

        with self._locks.try_hold(RETRY_LOCK_KEY, self._job_lock_ttl) as job:
            if not job.held:
                log.info(kv(event="retry_skipped", reason=ALREADY_RUNNING))
                return RetryOutcome(names, skipped=ALREADY_RUNNING)

            selected, remaining = self.selection(statuses=statuses, token_addresses=addresses, limit=checked_limit,
                                                 min_interval_minutes=min_interval_minutes, now=now)
            by_token: dict[str, list[str]] = {}
            for c in selected:  # fair order kept: a token's first due element decides its place
                by_token.setdefault(c.address, []).append(c.url)
            units = list(by_token.items())

            def deadline_reached() -> bool:
                return deadline is not None and self._monotonic() - entered >= deadline

            def work(unit: tuple[str, list[str]]) -> list[UrlOutcome]:
                address, urls = unit
                out: list[UrlOutcome] = []
                for url in urls:  # one token's URLs sequentially: one token lock at a time
                    if deadline_reached() or job.lost:
                        break
                    out.append(self._processor.record_one_url(address, url, run))
                return out

            def on_error(unit: tuple[str, list[str]], exc: Exception) -> list[UrlOutcome]:
                address, urls = unit
                return [
                    emit(run, UrlOutcome(address, url, None, EngineOutcome.FAILED, False, False, 0.0, 0.0,
                                         describe_error(exc)))
                    for url in urls
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
            unresolved = self._retry_unresolved(now - interval, checked_limit, run, deadline_reached, lambda: job.lost)
            lost = job.lost

        outcomes = tuple(u for batch in pool.results for u in batch)
        processed = len(outcomes)
        cut_in_run = len(selected) - processed
        if pool.stopped_by == STOPPED_BY_LOCK_LOST or (lost and cut_in_run):
            stopped_by = STOPPED_BY_LOCK_LOST
        elif cut_in_run:
            stopped_by = STOPPED_BY_DEADLINE
        elif remaining:
            stopped_by = STOPPED_BY_LIMIT
        else:
            stopped_by = STOPPED_BY_DRAINED
        outcome = RetryOutcome(
            names,
            candidate_urls=len(selected),
            processed=processed,
            converged=sum(1 for u in outcomes if u.converged),
            locked_out=sum(1 for u in outcomes if u.status == EngineOutcome.LOCKED_OUT),
            lost=sum(1 for u in outcomes if u.lease_lost or u.status == EngineOutcome.LOST),
            engine_failures=sum(1 for u in outcomes if u.engine_failure),
            remaining=remaining + cut_in_run,
            stopped_by=stopped_by,
            unresolved=unresolved,
            url_outcomes=outcomes,
            status_counts=dict(Counter(str(u.status) for u in outcomes)),
        )
        log.info(kv(event="retry_done", **{k: v for k, v in outcome.metadata().items() if not k.startswith("urls_")}))
        return outcome

    def _retry_unresolved(
        self,
        checked_before: datetime,
        limit: int,
        run: RunState,
        deadline_reached: Callable[[], bool],
        lock_lost: Callable[[], bool],
    ) -> dict[str, int]:
        """Raw values kept because their shortlink failed transiently: resolve them again."""
        counts: Counter[str] = Counter()
        for address, value in self._store.select_unresolved(checked_before, limit):
            if deadline_reached() or lock_lost():
                break
            try:
                counts[self._processor.resolve_unresolved(address, value, run)] += 1
            except Exception as exc:  # a backend failed for this value: the next run tries again
                log.warning(kv(event="unresolved_failed", token=address, field=value.field, error=type(exc).__name__))
                counts["failed"] += 1
        return dict(counts)
