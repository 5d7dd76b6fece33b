"""Reconcile: record the tokens of a past window that we never saw (docs/architecture.md, "Reconcile").

The token axis: one tracker range query fixes the candidates, one `$in` query drops the tokens we
already have (the set difference IS the idempotency check), the rest are recorded. A token is the
unit: limit and deadline stop only between tokens. No job-state collection: `remaining > 0` means
"run again", and recorded tokens then drop out of the difference.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from social_recording.domain.models import ensure_utc
from social_recording.locks.base import LockManager
from social_recording.recording._text import describe_error, kv
from social_recording.recording.job_pool import (
    ALREADY_RUNNING,
    JOB_LOCK_TTL_S,
    check_deadline,
    check_limit,
    check_max_workers,
    run_bounded,
)
from social_recording.recording.outcomes import TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.run_state import RunState
from social_recording.recording.sources import RangeToken, TokenRangeSource
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")

JOB_LOCK_PREFIX = "social-reconcile:reconcile"
DEFAULT_MIN_AF_COUNT = 3


def reconcile_lock_key(partition_key: str | None) -> str:
    """One lock per window: partitions of a backfill run in parallel (DESIGN §7)."""
    return JOB_LOCK_PREFIX if partition_key is None else f"{JOB_LOCK_PREFIX}:{partition_key}"


@dataclass(frozen=True)
class ReconcileOutcome:
    window_start: datetime
    window_end: datetime
    partition_key: str | None
    skipped: str | None = None
    """"already running" when another run holds this window's job lock (not an error, seed 004 §3.5)."""
    scanned: int = 0
    filtered: int = 0
    """Tokens with investor_count >= min_af_count (distinct addresses)."""
    already_seen: int = 0
    targeted: int = 0
    processed: int = 0
    """Tokens handed to `record` (all of them finished)."""
    failed: int = 0
    locked_out: int = 0
    no_profile: int = 0
    """Tokens the tracker gave no usable profile for (e.g. no image): nothing stored, so they are
    targeted again by the next run of this window."""
    malformed: int = 0
    """Tokens whose tracker item could not be read (junk fields): nothing stored, named in the run
    log, and targeted again by the next reconcile of this window."""
    malformed_items: tuple[str, ...] = ()
    """Items of the window's range answer that could not be read (index, address, reason): skipped,
    named here, and read again by the next reconcile of the window."""
    remaining: int = 0
    stopped_by: str | None = None
    """limit | deadline | drained (| lock_lost); None when skipped."""
    tokens: tuple[TokenOutcome, ...] = ()
    url_outcomes: tuple[UrlOutcome, ...] = ()
    status_counts: dict[str, int] = field(default_factory=dict)
    """Per-URL outcome status -> count."""

    def metadata(self) -> dict[str, object]:
        """The counters as flat run metadata (DESIGN §7)."""
        return {
            "partition_key": self.partition_key or "",
            "window_start": self.window_start.isoformat(),
            "window_end": self.window_end.isoformat(),
            "skipped": self.skipped or "",
            "scanned": self.scanned,
            "filtered": self.filtered,
            "already_seen": self.already_seen,
            "targeted": self.targeted,
            "processed": self.processed,
            "failed": self.failed,
            "locked_out": self.locked_out,
            "no_profile": self.no_profile,
            "malformed": self.malformed + len(self.malformed_items),
            "dropped_values": sum(len(t.dropped) for t in self.tokens),
            "unresolved_values": sum(t.unresolved for t in self.tokens),
            "remaining": self.remaining,
            "stopped_by": self.stopped_by or "",
            **{f"urls_{k}": v for k, v in sorted(self.status_counts.items())},
        }


def _check_window(start: object, end: object) -> tuple[datetime, datetime]:
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        raise ValueError(f"window bounds must be datetimes, got {start!r} and {end!r}")
    start, end = ensure_utc(start), ensure_utc(end)
    if not end > start:
        raise ValueError(f"window end {end.isoformat()} must be after window start {start.isoformat()}")
    return start, end


class ReconcileService:
    def __init__(
        self,
        store: Store,
        locks: LockManager,
        tracker: TokenRangeSource,
        processor: TokenProcessor,
        *,
        job_lock_ttl: float = JOB_LOCK_TTL_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._locks = locks
        self._tracker = tracker
        self._processor = processor
        self._job_lock_ttl = job_lock_ttl
        self._monotonic = monotonic

    def reconcile(
        self,
        window_start: datetime,
        window_end: datetime,
        *,
        partition_key: str | None = None,
        min_af_count: int = DEFAULT_MIN_AF_COUNT,
        limit: int | None = None,
        deadline_seconds: float | None = None,
        max_workers: int = 4,
        run: RunState | None = None,
    ) -> ReconcileOutcome:
        """Record the window's unseen tokens. A tracker failure propagates (zero writes: the range
        query comes before anything is written); one token's failure is counted, never fatal."""
        entered = self._monotonic()
        start, end = _check_window(window_start, window_end)
        if not isinstance(min_af_count, int) or isinstance(min_af_count, bool) or min_af_count < 1:
            raise ValueError(f"min_af_count must be an integer >= 1, got {min_af_count!r}")
        limit = check_limit(limit, allow_none=True)
        deadline = check_deadline(deadline_seconds)
        max_workers = check_max_workers(max_workers)
        if partition_key is not None and (not isinstance(partition_key, str) or not partition_key):
            raise ValueError(f"partition_key must be a non-empty string or None, got {partition_key!r}")
        run = run if run is not None else self._processor.new_run()

        with self._locks.try_hold(reconcile_lock_key(partition_key), self._job_lock_ttl) as job:
            if not job.held:
                log.info(kv(event="reconcile_skipped", partition=partition_key, reason=ALREADY_RUNNING))
                return ReconcileOutcome(start, end, partition_key, skipped=ALREADY_RUNNING)

            # The job lock comes first: two runs must not both fetch and record the same list.
            answer = self._tracker.range_report(start, end)
            scanned = list(answer.tokens)
            malformed = tuple(
                f"item {m.index}" + (f" ({m.address})" if m.address else "") + f": {m.reason}" for m in answer.malformed
            )
            for line in malformed:
                log.warning(kv(event="tracker_item_malformed", partition=partition_key, item=line))
            kept: dict[str, RangeToken] = {}
            for t in scanned:
                if t.investor_count >= min_af_count and t.address not in kept:
                    kept[t.address] = t
            existing = self._store.find_existing_addresses(list(kept)) if kept else set()
            targets = [t for a, t in kept.items() if a not in existing]

            def deadline_reached() -> bool:
                return deadline is not None and self._monotonic() - entered >= deadline

            def work(t: RangeToken) -> TokenOutcome:
                return self._processor.record(t.address, t.symbol, run)

            def on_error(t: RangeToken, exc: Exception) -> TokenOutcome:
                log.warning(kv(event="token_failed", token=t.address, error=type(exc).__name__))
                return TokenOutcome(t.address, TokenStatus.FAILED, detail=describe_error(exc))

            pool = run_bounded(
                targets,
                work,
                on_error,
                max_workers=max_workers,
                limit=limit,
                deadline_reached=deadline_reached,
                lock_lost=lambda: job.lost,
            )

        url_outcomes = tuple(u for t in pool.results for u in t.urls)
        outcome = ReconcileOutcome(
            start,
            end,
            partition_key,
            scanned=len(scanned),
            filtered=len(kept),
            already_seen=len(existing),
            targeted=len(targets),
            processed=pool.started,
            failed=sum(1 for t in pool.results if t.status is TokenStatus.FAILED),
            locked_out=sum(1 for t in pool.results if t.status is TokenStatus.LOCKED_OUT),
            no_profile=sum(1 for t in pool.results if t.status is TokenStatus.NO_PROFILE),
            malformed=sum(1 for t in pool.results if t.status is TokenStatus.MALFORMED),
            malformed_items=malformed,
            remaining=len(targets) - pool.started,
            stopped_by=pool.stopped_by,
            tokens=tuple(pool.results),
            url_outcomes=url_outcomes,
            status_counts=dict(Counter(str(u.status) for u in url_outcomes)),
        )
        log.info(kv(event="reconcile_done", **{k: v for k, v in outcome.metadata().items() if not k.startswith("urls_")}))
        return outcome
