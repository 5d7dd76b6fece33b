"""Reconcile: record the tokens of a past window that we never saw (docs/architecture.md, "Reconcile").

The token axis: one tracker range query fixes the candidates, one `$in` query drops the tokens we
already have (the set difference IS the idempotency check), the rest are recorded. A token is the
unit: limit and deadline stop only between tokens. No job-state collection: `remaining > 0` means
"run again", and recorded tokens then drop out of the difference.

Two steps, as reconcile_job runs them: `read_window` (writes nothing), then `record_window`, which
takes the window's job lock and repeats the cheap set difference under it, so a token another run
recorded in between is counted as already seen, never recorded twice.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime

from social_recording.domain.models import ensure_utc
from social_recording.domain.policy import DEFAULT_AF_INVESTOR_THRESHOLD
from social_recording.domain.url_machine import Why
from social_recording.locks.base import Lease
from social_recording.recording._text import kv
from social_recording.recording.job_lock import JobLock
from social_recording.recording.job_pool import (
    ALREADY_RUNNING,
    DEFAULT_MAX_WORKERS,
    check_deadline,
    check_limit,
    check_max_workers,
)
from social_recording.recording.outcomes import TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.processor import TokenProcessor, failed_token
from social_recording.recording.run_state import RunState
from social_recording.recording.sources import TokenRangeSource
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")

JOB_LOCK_PREFIX = "social-reconcile:reconcile"
DEFAULT_MIN_AF_COUNT = DEFAULT_AF_INVESTOR_THRESHOLD


def reconcile_lock_key(partition_key: str | None) -> str:
    """One lock per window: partitions of a backfill run in parallel."""
    return JOB_LOCK_PREFIX if partition_key is None else f"{JOB_LOCK_PREFIX}:{partition_key}"


@dataclass(frozen=True)
class ReconcileOutcome:
    window_start: datetime
    window_end: datetime
    partition_key: str | None
    skipped: str | None = None
    """"already running" when another run held this window's job lock for the whole wait (a live run:
    it does the work; this run recorded nothing, and its report says so)."""
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
    job_lock_waited_s: float = 0.0
    """How long the run waited for the window's lock (a crashed run's, until it expired)."""
    tokens: tuple[TokenOutcome, ...] = ()
    """Every token handed to the recorder, in the window's order. When the caller asked not to keep
    the per-URL outcomes (`keep_url_outcomes=False`: a large window's outcomes are counted, not
    held), only the tokens worth a line (`worth_a_line`), without their URL outcomes: the others
    are in `processed` and `created`."""
    created: int = 0
    """Tokens this run created in the store."""
    url_outcomes: tuple[UrlOutcome, ...] = ()
    status_counts: dict[str, int] = field(default_factory=dict)
    """Per-URL outcome status -> count."""

    def metadata(self) -> dict[str, object]:
        """The counters as flat run metadata."""
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
            "job_lock_waited_s": round(self.job_lock_waited_s, 1),
            **{f"urls_{k}": v for k, v in sorted(self.status_counts.items())},
        }


def worth_a_line(token: TokenOutcome) -> bool:
    """A token a run names in its report (not recorded, failed, lost, locked out, or with tracker
    values dropped or left unresolved); the others are only counted when a run keeps no per-URL
    outcomes (docs/architecture.md, "Run memory")."""
    return token.status not in _PLAIN or bool(token.dropped) or token.unresolved > 0


_PLAIN = frozenset({TokenStatus.RECORDED, TokenStatus.UP_TO_DATE})


class _Tally:
    """What a window's recording counts as its tokens finish (from the workers' threads): URL
    outcomes by status and tokens created, so per-token results need not be kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.status_counts: Counter[str] = Counter()
        self.created = 0

    def add(self, token: TokenOutcome) -> None:
        with self._lock:
            self.status_counts.update(str(u.status) for u in token.urls)
            self.created += int(token.created)


_COUNTED = TokenOutcome("", TokenStatus.RECORDED)
"""What the second look reads for a token that was only counted (never locked out)."""


@dataclass(frozen=True, slots=True)
class WindowTarget:
    """A token of the window that is not stored yet: what the recording step records (one per token
    of a window: kept small)."""

    address: str
    symbol: str | None = None


@dataclass(frozen=True)
class ReconcileWindow:
    """What the tracker says about a window, read before anything is written."""

    window_start: datetime
    window_end: datetime
    partition_key: str | None
    min_af_count: int
    scanned: int = 0
    """Items of the tracker's range answer that could be read."""
    filtered: int = 0
    """Distinct tokens with investor_count >= min_af_count."""
    already_seen: int = 0
    """Of those, tokens already stored."""
    targets: tuple[WindowTarget, ...] = ()
    """The rest, in the tracker's order: the tokens to record."""
    malformed_items: tuple[str, ...] = ()
    """Items that could not be read (index, address, reason): named, and read again next time."""


def _check_window(start: object, end: object) -> tuple[datetime, datetime]:
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        raise ValueError(f"window bounds must be datetimes, got {start!r} and {end!r}")
    start, end = ensure_utc(start), ensure_utc(end)
    if not end > start:
        raise ValueError(f"window end {end.isoformat()} must be after window start {start.isoformat()}")
    return start, end


def _check_min_af(min_af_count: object) -> int:
    if not isinstance(min_af_count, int) or isinstance(min_af_count, bool) or min_af_count < 1:
        raise ValueError(f"min_af_count must be an integer >= 1, got {min_af_count!r}")
    return min_af_count


def _check_partition(partition_key: object) -> str | None:
    if partition_key is not None and (not isinstance(partition_key, str) or not partition_key):
        raise ValueError(f"partition_key must be a non-empty string or None, got {partition_key!r}")
    return partition_key


@dataclass(frozen=True)
class ReconcileService:
    """Reconcile's two steps over the engine's store, the tracker's range and the token processor."""

    store: Store
    tracker: TokenRangeSource
    processor: TokenProcessor
    job_lock: JobLock

    def read_window(
        self,
        window_start: datetime,
        window_end: datetime,
        *,
        partition_key: str | None = None,
        min_af_count: int = DEFAULT_MIN_AF_COUNT,
    ) -> ReconcileWindow:
        """The first step: the window's tokens to record. The tracker's range query (its failure
        propagates, nothing is written), the AF floor (each address once), and one `$in` query that
        drops the tokens already stored. Items the tracker sent but we could not read are logged and
        named."""
        start, end = _check_window(window_start, window_end)
        partition_key = _check_partition(partition_key)
        min_af_count = _check_min_af(min_af_count)
        answer = self.tracker.scan_range(
            start, end, lambda t: WindowTarget(t.address, t.symbol) if t.investor_count >= min_af_count else None)
        malformed = tuple(
            f"item {m.index}" + (f" ({m.address})" if m.address else "") + f": {m.reason}" for m in answer.malformed
        )
        for line in malformed:
            log.warning(kv(event="tracker_item_malformed", partition=partition_key, item=line))
        kept: dict[str, WindowTarget] = {}
        for target in answer.kept:
            kept.setdefault(target.address, target)
        existing = self.store.find_existing_addresses(list(kept)) if kept else set()
        return ReconcileWindow(
            start, end, partition_key, min_af_count,
            scanned=answer.scanned,
            filtered=len(kept),
            already_seen=len(existing),
            targets=tuple(t for a, t in kept.items() if a not in existing),
            malformed_items=malformed,
        )

    def record_window(
        self,
        window: ReconcileWindow,
        *,
        limit: int | None = None,
        deadline_seconds: float | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
        run: RunState | None = None,
        keep_url_outcomes: bool = True,
    ) -> ReconcileOutcome:
        """The second step: under the window's job lock (skipped when another run holds it), drop
        the targets stored since the window was read, then record the rest. With
        `keep_url_outcomes=False` the per-URL outcomes are only counted (in `run` and in
        `status_counts`), so a window of any size costs the same memory."""
        entered = self.job_lock.monotonic()
        if not isinstance(window, ReconcileWindow):
            raise ValueError(f"window must be a ReconcileWindow, got {window!r}")
        limit = check_limit(limit, allow_none=True)
        deadline = check_deadline(deadline_seconds)
        max_workers = check_max_workers(max_workers)
        run = run if run is not None else self.processor.new_run(Why.RECONCILE)
        run.ask(self.processor.request(Why.RECONCILE))
        with self.job_lock.hold(reconcile_lock_key(window.partition_key)) as job:
            if not job.held:
                log.info(kv(event="reconcile_skipped", partition=window.partition_key, reason=ALREADY_RUNNING,
                            waited_s=self.job_lock.wait))
                return ReconcileOutcome(
                    window.window_start, window.window_end, window.partition_key, skipped=ALREADY_RUNNING,
                    job_lock_waited_s=job.waited_ms / 1000.0,
                    scanned=window.scanned, filtered=window.filtered, already_seen=window.already_seen,
                    targeted=len(window.targets), malformed_items=window.malformed_items,
                    remaining=len(window.targets),
                )
            stored = self.store.find_existing_addresses([t.address for t in window.targets]) \
                if window.targets else set()
            if stored:
                log.info(kv(event="reconcile_recorded_meanwhile", partition=window.partition_key, tokens=len(stored)))
                window = replace(window, already_seen=window.already_seen + len(stored),
                                 targets=tuple(t for t in window.targets if t.address not in stored))
            return self._record_held(window, job, entered, limit=limit, deadline=deadline,
                                     max_workers=max_workers, run=run, keep_url_outcomes=keep_url_outcomes)

    def _record_held(
        self,
        window: ReconcileWindow,
        job: Lease,
        entered: float,
        *,
        limit: int | None,
        deadline: float | None,
        max_workers: int,
        run: RunState,
        keep_url_outcomes: bool,
    ) -> ReconcileOutcome:
        targets = window.targets
        tally = _Tally()
        driver = self.job_lock.driver(run, job, entered, max_workers=max_workers, deadline=deadline,
                                       token_lock_wait=self.processor.token_lock_wait)

        def work(t: WindowTarget, wait: float) -> TokenOutcome | None:
            """The token's outcome, or None when it was only counted (`keep_url_outcomes=False`
            and not worth a line). A token locked out is kept: the second look records it again."""
            outcome = self.processor.record(t.address, t.symbol, run, lock_wait=wait)
            tally.add(outcome)
            if keep_url_outcomes:
                return outcome
            return replace(outcome, urls=()) if worth_a_line(outcome) else None

        def on_error(t: WindowTarget, exc: Exception) -> TokenOutcome | None:
            return failed_token(t.address, exc)

        def status(result: TokenOutcome | None) -> TokenOutcome:
            return result if result is not None else _COUNTED

        pool, results = driver.drive(
            targets, work, on_error, limit=limit, status=status, unit_name="token(s)",
            then=f"the next run of partition {window.partition_key} (or the daily reconcile) records them",
        )
        tokens = tuple(t for t in results if t is not None)
        outcome = ReconcileOutcome(
            window.window_start,
            window.window_end,
            window.partition_key,
            scanned=window.scanned,
            filtered=window.filtered,
            already_seen=window.already_seen,
            targeted=len(targets),
            processed=pool.started,
            failed=sum(1 for t in tokens if t.status is TokenStatus.FAILED),
            locked_out=sum(1 for t in tokens if t.status is TokenStatus.LOCKED_OUT),
            no_profile=sum(1 for t in tokens if t.status is TokenStatus.NO_PROFILE),
            malformed=sum(1 for t in tokens if t.status is TokenStatus.MALFORMED),
            malformed_items=window.malformed_items,
            remaining=len(targets) - pool.started,
            stopped_by=pool.stopped_by,
            job_lock_waited_s=job.waited_ms / 1000.0,
            tokens=tokens,
            created=tally.created,
            url_outcomes=tuple(u for t in tokens for u in t.urls),
            status_counts=dict(tally.status_counts),
        )
        log.info(kv(event="reconcile_done", **{k: v for k, v in outcome.metadata().items() if not k.startswith("urls_")}))
        return outcome
